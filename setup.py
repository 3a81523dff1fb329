"""The compiled part of the package; everything else is declared in setup.cfg.

libs/snapshot/_textrows.c parses the snapshot's row packets into Arrow buffers (libs/snapshot/
row_stream.py); libs/binlog/_rowimages.c decodes the row images of rows events (libs/binlog/
rows_core.py); libs/binlog/_frames.c is decode_event's frame shell and the codec's record
constructors (framing.py, fastrec.py). Limited API 3.11 (abi3): one build serves Python 3.11
and 3.12. Not optional: a build without a C compiler fails here instead of shipping a snapshot
reader several times slower (tests/unit/snapshot/test_row_stream.py and tests/unit/codec_fuzz/
test_row_core.py and test_frame_shell.py also check that they load).
"""
from setuptools import Extension, setup


def _extension(name: str, *sources: str, headers: tuple[str, ...] = ()) -> Extension:
    """sources: the module's .c files; headers: the .h files they include from their own folder
    (`depends`: a change to one rebuilds the module, and the sdist keeps them)."""
    return Extension(name, list(sources), depends=list(headers), py_limited_api=True,
                     define_macros=[("Py_LIMITED_API", "0x030B0000")],
                     extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-missing-field-initializers"])


setup(
    ext_modules=[_extension("libs.snapshot._textrows", "libs/snapshot/_textrows.c"),
                 _extension("libs.binlog._rowimages", "libs/binlog/_rowimages.c",
                            "libs/binlog/_rowimages_values.c", headers=("libs/binlog/_rowimages.h",)),
                 _extension("libs.binlog._frames", "libs/binlog/_frames.c", "libs/binlog/_frames_records.c",
                            headers=("libs/binlog/_frames.h",))],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
