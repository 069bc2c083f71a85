"""Placement policies: which node (and which GPUs on it) one replica goes to.

A policy is a ``PlacementPolicy`` subclass with a ``name``; defining it registers it, and
``make_policy`` builds it by name (through its ``from_context``). ``PLACEMENT_POLICIES`` lists
the engine's own policies, in the order they are registered.
"""

# Imported for their policies' registration, in the order of PLACEMENT_POLICIES.
from . import baselines, cpu_aware, demand_waste, fgd  # noqa: F401
from .base import PlacementPolicy, PolicyContext, make_policy, policy_names

PLACEMENT_POLICIES = policy_names()

__all__ = [
    "PLACEMENT_POLICIES",
    "PlacementPolicy",
    "PolicyContext",
    "make_policy",
]
