"""The package version: part of every cache key whose contents the code decides."""

__version__ = "0.1.0"
