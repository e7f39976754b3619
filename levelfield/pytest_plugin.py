"""levelfield's pytest plugin: ``--lf-trials`` / ``--lf-criteria`` options and the ``lf_assert_eval`` fixture.

Registered through the ``pytest11`` entry point, so it loads in every pytest run where levelfield
is installed; it therefore imports nothing heavy until a test uses it. In a test file:

    test_home = lf.testing.eval_test("tests/fixture/", "mypkg.agent:root")    # one item per case

or, with the fixture:

    def test_home(lf_assert_eval):
        lf_assert_eval("tests/fixture/home.evalset.json", my_agent)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["lf_assert_eval", "pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Command-line overrides for gated evaluations, so CI can ask for more trials or other criteria."""
    from .cli.arguments import whole

    group = parser.getgroup("levelfield", "levelfield agent evaluation")
    group.addoption(
        "--lf-trials",
        dest="lf_trials",
        type=whole(1),
        default=None,
        help="run every eval case this many times (overrides trials= in eval_test / lf_assert_eval)",
    )
    group.addoption(
        "--lf-criteria",
        dest="lf_criteria",
        default=None,
        help="a test_config.json whose criteria replace those of eval_test / lf_assert_eval",
    )


@pytest.fixture
def lf_assert_eval(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``levelfield.testing.assert_eval`` with ``--lf-trials`` / ``--lf-criteria`` applied when given."""
    from levelfield.testing.gating import assert_eval

    trials = request.config.getoption("lf_trials", default=None)
    criteria = request.config.getoption("lf_criteria", default=None)

    def run(source: Any, agent: Any, **kwargs: Any) -> Any:
        if trials:
            kwargs["trials"] = trials
        if criteria:
            kwargs["criteria"] = criteria
        return assert_eval(source, agent, **kwargs)

    return run
