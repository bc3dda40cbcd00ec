"""Build of the C extensions (the Mondrian kernel, the (k,e) kernel, the m-invariance split,
the code trees of compression anonymity, the class counting of global recoding, the release
knowledge's propagation, the CSV writer); all other metadata is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "anonkit.algorithms._mondrian_c",
            ["src/anonkit/algorithms/_mondrian_c.c"],
            # no contraction of a * b + c into one fused instruction: entropy scores, and
            # so the dimensions chosen, are the same on every platform
            extra_compile_args=["-O3", "-ffp-contract=off"],
        ),
        Extension(
            "anonkit.algorithms._ke_c",
            ["src/anonkit/algorithms/_ke_c.c"],
            extra_compile_args=["-O3", "-ffp-contract=off"],
        ),
        Extension(
            "anonkit.algorithms._minvariance_c",
            ["src/anonkit/algorithms/_minvariance_c.c"],
            # float scores bit-identical to the plainly written rule, so ties resolve alike
            extra_compile_args=["-O3", "-ffp-contract=off"],
        ),
        Extension(
            "anonkit.algorithms._recoding_c",
            ["src/anonkit/algorithms/_recoding_c.c"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "anonkit.algorithms._compression_c",
            ["src/anonkit/algorithms/_compression_c.c"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "anonkit.history._knowledge_c",
            ["src/anonkit/history/_knowledge_c.c"],
            # bounds are sums of whole numbers: exact in float64 in any order
            extra_compile_args=["-O3"],
        ),
        Extension(
            "anonkit.data._csv_writer",
            ["src/anonkit/data/_csv_writer.c"],
            extra_compile_args=["-O3", "-pthread"],
            extra_link_args=["-pthread"],
        ),
    ],
)
