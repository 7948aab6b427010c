"""One Channel per task (attnlib.channels.for_task): dispatch, and each channel's
methods against the library's public functions and against the generic channel.

Independent references: the generic :class:`attnlib.channels.Channel` computes every
quantity numerically (Newton prox, quasi-Monte Carlo test error) for any task, so each
closed form of a built-in channel (linear output step, linear and T = 2 hardmax test
errors) is checked against it on the same task; ``m_eff`` against the rank of the
readout's Jacobian; the seq2seq posterior's ``J mmse = m_eff`` identity.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import bayes, channels, se, tasks
from attnlib.se import output as se_output
from attnlib.se import test_error as se_test_error

TASKS = {
    "linear_T1": tasks.Linear(T=1),
    "linear_T2_noise": tasks.Linear(T=2, noise=0.1),
    "seq2seq": tasks.Seq2Seq(T=2),
    "seq2seq_out": tasks.Seq2Seq(T=2, noise=0.1, noise_on="outputs"),
    "seq2lab": tasks.Seq2Lab(T=2, noise=0.1),
    "hardmax": tasks.Hardmax(T=2),
    "hardmax_T3": tasks.Hardmax(T=3, noise=0.1),
    "custom": tasks.Custom(T=2, g=jnp.tanh),
}
KINDS = {
    tasks.Linear: channels.linear.LinearChannel,
    tasks.Seq2Seq: channels.softmax.Seq2SeqChannel,
    tasks.Seq2Lab: channels.softmax.Seq2LabChannel,
    tasks.Hardmax: channels.hardmax_channel.HardmaxChannel,
    tasks.Custom: channels.Channel,
}


def _pairs(task, n=32, seed=0):
    """Gaussian pairs of the state evolution at (m, q, v) = (0.4, 0.5, 0.3), Q0 = 1."""
    K = task.n_pairs
    dim = 2 * K + channels.for_task(task).noise_dim
    z = jax.random.normal(jax.random.PRNGKey(seed), (n, dim), dtype=jnp.float64)
    return se_output.pairs(task, z, 1.0, jnp.asarray([0.4, 0.5, 0.3]))


@pytest.mark.parametrize("name", TASKS)
def test_every_task_maps_to_its_channel(name):
    task = TASKS[name]
    ch = channels.for_task(task)
    assert type(ch) is KINDS[type(task)] and ch.task == task
    assert ch == channels.for_task(task) and hash(ch) == hash(channels.for_task(task))
    assert (
        ch.m_eff
        == task.m_eff
        == (0 if task.piecewise_constant else tasks.effective_constraints(task))
    )
    # a scale-free (piecewise-constant) loss puts inequalities on S, no equation
    assert ch.scale_free == (ch.m_eff == 0) == isinstance(task, tasks.Hardmax)
    assert ch.global_prox == isinstance(task, (tasks.Linear, tasks.Hardmax))


def test_only_the_channels_ask_a_task_what_its_loss_is():
    """The state evolution, GAMP and the thresholds ask the task's channel (``scale_free``,
    ``global_prox``, ``a_hat_terms``, ``replicon_factor``), not the task: outside
    attnlib/channels no module reads ``piecewise_constant`` (tasks.py defines it)."""
    root = Path(attnlib.__file__).parent
    readers = [
        str(p.relative_to(root))
        for p in sorted(root.rglob("*.py"))
        if "piecewise_constant" in p.read_text() and p.parent.name != "channels"
    ]
    assert readers == ["tasks.py"]


def test_for_task_refuses_what_is_not_a_task():
    with pytest.raises(ValueError, match="task must be an attnlib.tasks.Task"):
        channels.for_task("seq2seq")


@pytest.mark.parametrize("name", TASKS)
def test_channel_agrees_with_the_public_functions(name):
    task = TASKS[name]
    ch = channels.for_task(task)
    assert ch.noise_dim == se_output.noise_dim(task)
    P = _pairs(task)
    step = channels.output_step(task, P.Y, P.omega, P.V)
    mine = ch.output_step(P.Y, P.omega, P.V, None)
    for a, b in zip(step, mine, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    qmc = (256, 2, 3)
    assert se_test_error.test_errors(task, 1.0, 0.4, 0.5, qmc) == ch.test_errors(1.0, 0.4, 0.5, qmc)
    assert bayes.is_gaussian(task) == ch.gaussian


@pytest.mark.parametrize("T", [1, 2, 3])
def test_linear_closed_forms_match_the_generic_channel(T):
    """Newton on the quadratic loss reproduces the closed-form output step; the QMC test
    error the closed form, within 5.5 standard errors of its 8 replicates (Student t with
    7 degrees of freedom, two-sided 0.1 %: 5.41)."""
    task = tasks.Linear(T=T, noise=0.2)
    lin, gen = channels.for_task(task), channels.Channel(task)
    P = _pairs(task, seed=T)
    a, b = lin.output_step(P.Y, P.omega, P.V, None), gen.output_step(P.Y, P.omega, P.V, None)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-9, atol=1e-10)
    closed = lin.test_errors(1.0, 0.4, 0.5, (4096, 8, 0))
    qmc = gen.test_errors(1.0, 0.4, 0.5, (4096, 8, 0))
    for i in range(2):
        assert abs(closed[i] - qmc[i]) <= 5.5 * qmc.stderr[i] + 1e-12
    assert lin.mse_test_error(1.0 - 0.8 + 0.5) == pytest.approx(closed.test_error, rel=1e-12)


@pytest.mark.parametrize("noise_on", ["logits", "outputs", "target"])
def test_hardmax_t2_sheppard_formula_matches_qmc(noise_on):
    task = tasks.Hardmax(T=2, noise=0.1, noise_on=noise_on)
    closed = channels.for_task(task).test_errors(1.0, 0.5, 0.6, (8192, 8, 0))
    qmc = channels.Channel(task).test_errors(1.0, 0.5, 0.6, (8192, 8, 0))
    assert closed.stderr == (0.0, 0.0)
    for i in range(2):
        assert abs(closed[i] - qmc[i]) <= 5.5 * qmc.stderr[i] + 1e-3  # indicator: slow QMC


@pytest.mark.parametrize("T", [2, 3])
def test_seq2seq_posterior_counts_m_eff_measurements(T):
    """Noise-free seq2seq: J mmse = K - 1 = m_eff at every mmse (shift-projected precision)."""
    ch = channels.for_task(tasks.Seq2Seq(T=T))
    for mmse in (0.1, 0.7):
        J, dof, err = ch.gaussian_information(mmse)
        assert dof == pytest.approx(ch.m_eff, rel=1e-12) and err == 0.0
    assert not channels.for_task(tasks.Seq2Seq(T=T, noise=0.1, noise_on="outputs")).gaussian


def test_labels_leave_the_range_only_with_output_noise_off_the_linear_task():
    leave = {n: channels.for_task(t).labels_leave_range for n, t in TASKS.items()}
    assert leave == {n: n == "seq2seq_out" for n in TASKS}
    assert not channels.for_task(
        tasks.Linear(T=2, noise=0.1, noise_on="outputs")
    ).labels_leave_range


def test_test_error_from_overlaps_uses_the_channel():
    task = tasks.Seq2Lab(T=2, noise=0.1)
    te = channels.for_task(task).test_errors(1.0, 0.4, 0.5, (512, 4, 0))
    assert se.test_error_from_overlaps(task, 1.0, 0.4, 0.5, n_qmc=512) == te.test_error
