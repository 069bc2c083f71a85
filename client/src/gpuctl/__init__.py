"""gpuctl: the command-line client of the GPU Cloud Portal's REST API."""

__version__ = "0.1.0"
