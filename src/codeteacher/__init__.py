"""codeteacher: a local code teacher for scientific C++ codebases."""

__version__ = "0.1.0"
