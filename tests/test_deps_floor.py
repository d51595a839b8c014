"""pyproject.toml's SciPy floor admits only versions whose bootstrap / permutation_test take ``rng=``.

leaderboards/stats.py passes ``rng=`` to both; SciPy 1.15.0 added that keyword (1.14.1 raises
``TypeError: bootstrap() got an unexpected keyword argument 'rng'``).
"""

import inspect
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
FIRST_SCIPY_WITH_RNG = Version("1.15")


def _scipy_requirement() -> Requirement:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    reqs = [Requirement(d) for d in deps if Requirement(d).name == "scipy"]
    assert len(reqs) == 1, deps
    return reqs[0]


def test_scipy_floor_has_rng():
    req = _scipy_requirement()
    floors = [Version(s.version) for s in req.specifier if s.operator in (">=", "==", "~=")]
    assert floors, f"scipy has no lower bound: {req}"
    assert max(floors) >= FIRST_SCIPY_WITH_RNG, f"{req} admits a SciPy without rng= (first: {FIRST_SCIPY_WITH_RNG})"
    assert not req.specifier.contains("1.14.1")


def test_stats_still_needs_rng_and_installed_scipy_has_it():
    # the reason for the floor: stats.py passes rng= to both functions, and the installed SciPy accepts it
    src = (ROOT / "leaderboards" / "stats.py").read_text()
    assert len(re.findall(r"rng=np\.random\.default_rng", src)) >= 4
    from scipy import stats

    assert "rng" in inspect.signature(stats.bootstrap).parameters
    assert "rng" in inspect.signature(stats.permutation_test).parameters
