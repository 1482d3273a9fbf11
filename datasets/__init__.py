"""Data for the library's benchmarks: Experience-Transfer (HDR paper) and ARC-AGI.

This package depends on nothing else in the project. Note that its name shadows
Hugging Face's ``datasets`` in the same environment; nothing here imports that.
"""
