"""Placement policies register themselves by name; make_policy builds them from a context."""

from abc import abstractmethod

import pytest

from scheduling.engine.policies import PLACEMENT_POLICIES, PlacementPolicy, base, make_policy


@pytest.fixture(autouse=True)
def scratch_registry(monkeypatch):
    """Policies defined by a test stay out of every other test's registry."""
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))


def test_the_engine_policies_are_registered_in_their_listed_order():
    assert base.policy_names() == PLACEMENT_POLICIES


def test_a_new_policy_is_built_by_its_name_from_the_context():
    class Seeded(PlacementPolicy):
        name = "seeded"

        def __init__(self, *, seed: int) -> None:
            self.seed = seed

        @classmethod
        def from_context(cls, context):
            return cls(seed=context.seed)

        def scores(self, *, cluster, candidates, demand):
            return candidates

    built = make_policy(name="seeded", seed=7)
    assert isinstance(built, Seeded) and built.seed == 7


def test_an_abstract_intermediate_class_is_not_registered():
    class Tiebreaking(PlacementPolicy):
        @abstractmethod
        def tiebreak(self): ...

    assert base.policy_names() == PLACEMENT_POLICIES


def test_a_policy_without_its_own_name_or_with_a_taken_one_is_refused():
    with pytest.raises(TypeError, match="must declare its own name"):

        class Nameless(PlacementPolicy):
            def scores(self, *, cluster, candidates, demand):
                return candidates

    with pytest.raises(TypeError, match="'fgd' is taken"):

        class Impostor(PlacementPolicy):
            name = "fgd"

            def scores(self, *, cluster, candidates, demand):
                return candidates
