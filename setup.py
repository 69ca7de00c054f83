"""The one compiled piece: modelpool.fastscan._scan (optional: without a compiler the Python scans run)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "modelpool.fastscan._scan",
            ["src/modelpool/fastscan/_scan.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
