"""attnlib.book: the numbers the chapters glue into their prose."""

import numpy as np
import pytest

from attnlib import book


def test_floats_lose_only_their_last_bits():
    # Two results that differ in the last bits of a double (as between machines)
    # glue to the same text; a difference at the 1e-7 level still shows.
    a, b = 0.16985778129826387, 0.16985778129826382
    assert book.SIGNIFICANT_DIGITS == 8
    assert repr(book.plain_number(a)) == repr(book.plain_number(b))
    assert repr(book.plain_number(a)) == "0.16985778"
    assert book.plain_number(0.169857781) != book.plain_number(0.169857791)
    assert abs(book.plain_number(a) - a) <= 1e-8 * a


def test_numpy_scalars_become_plain_numbers():
    for value, kind in ((np.float64(1.5), float), (np.float32(2.0), float), (np.int64(3), int)):
        out = book.plain_number(value)
        assert type(out) is kind and out == value
    assert book.plain_number(True) is True


@pytest.mark.parametrize("value", ["1.0", None, [1.0], 1j, np.array([1.0, 2.0])])
def test_plain_number_rejects_what_is_not_a_real_number(value):
    with pytest.raises(ValueError, match="value"):
        book.plain_number(value)


@pytest.mark.parametrize("name", ["", None, 3])
def test_glue_names_must_be_strings(name):
    with pytest.raises(ValueError, match="name"):
        book.glue(name, 1.0)
