"""Cluster backends, plugins the app drives: `simulated` (the default) or `kubernetes`. They
import neither the app nor the kernel: configuration, clock, metrics client and storage are
passed in (`scheduling.backends` builds the one the settings choose)."""

from .base import ClusterBackend, ClusterError, manifests_delete

__all__ = ["ClusterBackend", "ClusterError", "manifests_delete"]
