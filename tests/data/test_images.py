"""Image readers: idx (MNIST), .npz and PNG folders; every refusal names file, record, value."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dpforge.data.arrays import ArrayData
from dpforge.data.images import (
    draft_image_schema,
    read_idx,
    read_idx_images,
    read_image_folder,
    read_images,
    read_npz_images,
    write_idx,
)
from dpforge.errors import DataError, OutputExistsError, SchemaError
from dpforge.schema.array import ArraySchema

MNIST = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "mnist"


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _idx_bytes(code: int, dims: tuple[int, ...], payload: bytes) -> bytes:
    return bytes([0, 0, code, len(dims)]) + struct.pack(f">{len(dims)}I", *dims) + payload


def _png(path: Path, array: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)
    return path


def _png_16bit_rgb(path: Path, width: int = 2, height: int = 2) -> Path:
    """A minimal 16-bit RGB PNG (Pillow cannot write one), written chunk by chunk."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x12\x34" * 3 * width for _ in range(height))
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return path


# -- idx --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["images-idx3-ubyte", "images-idx3-ubyte.gz"])
def test_idx_round_trip(tmp_path, name):
    images = _rng().integers(0, 256, size=(7, 5, 4), dtype=np.uint8)
    labels = np.array([0, 1, 2, 3, 4, 5, 9], dtype=np.uint8)
    write_idx(images, tmp_path / name)
    write_idx(labels, tmp_path / "labels-idx1-ubyte")
    np.testing.assert_array_equal(read_idx(tmp_path / name), images)
    data = read_idx_images(tmp_path / name, tmp_path / "labels-idx1-ubyte")
    assert data.values.shape == (7, 1, 5, 4) and data.values.dtype == np.uint8
    np.testing.assert_array_equal(data.values[:, 0], images)
    assert data.labels.tolist() == ["0", "1", "2", "3", "4", "5", "9"]


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.float32, np.float64])
def test_idx_multi_byte_types_round_trip(tmp_path, dtype):
    array = (_rng().normal(size=(3, 2)) * 100).astype(dtype)
    write_idx(array, tmp_path / "a.idx")
    back = read_idx(tmp_path / "a.idx")
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative
    np.testing.assert_array_equal(back, array)


def test_write_idx_refuses_overwrite_and_bad_dtype(tmp_path):
    target = tmp_path / "a.idx"
    write_idx(np.zeros((2, 2), np.uint8), target)
    before = target.read_bytes()
    with pytest.raises(OutputExistsError, match="already exists"):
        write_idx(np.ones((2, 2), np.uint8), target)
    assert target.read_bytes() == before
    write_idx(np.ones((2, 2), np.uint8), target, overwrite=True)
    assert read_idx(target).sum() == 4
    with pytest.raises(DataError, match="uint8, int8.*got 1 dimension.*bool"):
        write_idx(np.zeros(3, bool), tmp_path / "b.idx")


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (b"\x00\x00", "2 byte.*too short to be an idx file"),
        (b"\x12\x34\x08\x01" + b"\x00" * 8, "does not start with an idx magic number.*12 34 08 01"),
        (
            _idx_bytes(0x0A, (2,), b"ab"),
            "unknown idx data type code 0x0A.*0x08 \\(unsigned byte\\)",
        ),
        (bytes([0, 0, 8, 0]), "declares 0 dimensions"),
        (bytes([0, 0, 8, 3]) + b"\x00" * 6, "declares 3 dimensions.*ends after 10 bytes"),
        (_idx_bytes(0x08, (2, 3), b"\x01" * 5), r"dimensions \[2, 3\].*holds 17 bytes.*truncated"),
        (_idx_bytes(0x08, (2, 3), b"\x01" * 7), "has trailing bytes"),
        (
            gzip.compress(_idx_bytes(0x08, (2,), b"ab"), mtime=0)[:-6],
            "gzip file that cannot be decompre",
        ),
    ],
)
def test_idx_errors(tmp_path, content, pattern):
    path = tmp_path / "bad-idx3-ubyte"
    path.write_bytes(content)
    with pytest.raises(DataError, match=pattern) as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_idx_images_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_idx(tmp_path / "missing.gz")
    write_idx(np.zeros(4, np.uint8), tmp_path / "labels")
    write_idx(np.zeros((4, 2, 2), np.uint8), tmp_path / "images")
    write_idx(np.zeros((3,), np.uint8), tmp_path / "three-labels")
    write_idx(np.zeros((4, 2, 2), np.float32), tmp_path / "float-images")
    write_idx(np.zeros((0, 2, 2), np.uint8), tmp_path / "empty")
    with pytest.raises(DataError, match=r"3 dimensions.*\[4\] \(is this the labels file\?\)"):
        read_idx_images(tmp_path / "labels")
    with pytest.raises(DataError, match="1 dimension.*is it an images file"):
        read_idx_images(tmp_path / "images", tmp_path / "images")
    with pytest.raises(DataError, match="holds 3 labels but .*images holds 4 images"):
        read_idx_images(tmp_path / "images", tmp_path / "three-labels")
    with pytest.raises(DataError, match="unsigned bytes.*float32.*npz"):
        read_idx_images(tmp_path / "float-images")
    with pytest.raises(DataError, match="holds no images"):
        read_idx_images(tmp_path / "empty")


@pytest.mark.skipif(
    not (MNIST / "t10k-images-idx3-ubyte.gz").is_file(),
    reason=f"the MNIST files are not in {MNIST} (../shared/datasets/mnist)",
)
def test_real_mnist_test_set():
    data = read_images(
        MNIST / "t10k-images-idx3-ubyte.gz", labels_path=MNIST / "t10k-labels-idx1-ubyte.gz"
    )
    assert data.values.shape == (10000, 1, 28, 28) and data.values.dtype == np.uint8
    assert data.labels[:10].tolist() == ["7", "2", "1", "0", "4", "1", "4", "9", "5", "9"]
    assert data.values.max() == 255 and data.values.min() == 0
    schema = draft_image_schema(data)
    assert schema.classes == tuple(str(d) for d in range(10))
    assert [(c.lower, c.upper) for c in schema.channels] == [(0.0, 255.0)]


# -- npz --------------------------------------------------------------------------------------
def test_npz_layouts(tmp_path):
    last = _rng().integers(0, 256, size=(4, 6, 5, 3), dtype=np.uint8)
    np.savez(tmp_path / "last.npz", x=last, y=np.array([1, 2, 1, 2]))
    np.savez(tmp_path / "first.npz", images=last.transpose(0, 3, 1, 2))
    np.savez(tmp_path / "gray.npz", pixels=last[..., 0])
    data = read_npz_images(tmp_path / "last.npz")
    assert data.values.shape == (4, 3, 6, 5) and data.values.flags.c_contiguous
    np.testing.assert_array_equal(data.values, last.transpose(0, 3, 1, 2))
    assert data.labels.tolist() == ["1", "2", "1", "2"]
    first = read_npz_images(tmp_path / "first.npz")
    np.testing.assert_array_equal(first.values, data.values)
    assert first.labels is None
    gray = read_npz_images(tmp_path / "gray.npz")  # the only array, whatever its name
    assert gray.values.shape == (4, 1, 6, 5)


def test_npz_float_values_and_explicit_channels(tmp_path):
    values = _rng().random((2, 3, 4, 3))  # ambiguous: axis 1 and axis 3 both have size 3
    np.savez(tmp_path / "a.npz", data=values, target=np.array(["cat", "dog"]))
    with pytest.raises(DataError, match="could be channel-first or channel-last.*channels="):
        read_npz_images(tmp_path / "a.npz", values_key="data")
    data = read_npz_images(tmp_path / "a.npz", "data", "target", channels="last")
    assert data.values.dtype == np.float32 and data.values.shape == (2, 3, 3, 4)
    assert data.labels.tolist() == ["cat", "dog"]
    assert read_npz_images(tmp_path / "a.npz", "data", channels="first").values.shape == (
        2,
        3,
        4,
        3,
    )


@pytest.mark.parametrize(
    ("arrays", "kwargs", "pattern"),
    [
        ({"x": np.zeros((2, 5, 5, 4))}, {}, "no axis of 1 or 3 channels.*drop the alpha"),
        ({"x": np.zeros((2, 5))}, {}, r"\(n, H, W\).*got \[2, 5\]"),
        ({"x": np.zeros((0, 5, 5))}, {}, "holds no images"),
        ({"x": np.array([[["a"]]])}, {}, "must be numbers, got dtype <U1"),
        ({"a": np.zeros((2, 4, 4)), "b": np.zeros(2)}, {}, "cannot tell which.*values_key"),
        ({"x": np.zeros((2, 4, 4))}, {"values_key": "img"}, r"no array 'img'.*\['x'\]"),
        ({"x": np.zeros((2, 4, 4))}, {"labels_key": "lab"}, "no array 'lab' for the labels"),
        ({"x": np.zeros((2, 4, 4)), "y": np.eye(2)}, {}, r"shape \[2, 2\] \(one-hot"),
        ({"x": np.zeros((2, 4, 4)), "y": np.zeros(3)}, {}, "2 records but 3 labels"),
        ({"x": np.zeros((2, 4, 4)), "y": np.array([1.0, np.nan])}, {}, "record 2.*no label"),
        ({"x": np.zeros((2, 4, 4))}, {"channels": "middle"}, "'first', 'last' or None"),
    ],
)
def test_npz_errors(tmp_path, arrays, kwargs, pattern):
    np.savez(tmp_path / "a.npz", **arrays)
    with pytest.raises(DataError, match=pattern):
        read_npz_images(tmp_path / "a.npz", **kwargs)


def test_npz_non_finite_value_names_the_record(tmp_path):
    values = np.zeros((3, 2, 2))
    values[2, 1, 0] = np.inf
    np.savez(tmp_path / "a.npz", x=values)
    with pytest.raises(DataError, match=r"array 'x': record 3 \(index 2\) holds the value inf"):
        read_npz_images(tmp_path / "a.npz")


def test_npz_refuses_pickles_and_non_archives(tmp_path):
    np.savez(tmp_path / "obj.npz", x=np.zeros((2, 2, 2)), y=np.array([{"a": 1}, None]))
    with pytest.raises(DataError, match="'y' holds Python objects.*can run code"):
        read_npz_images(tmp_path / "obj.npz")
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(DataError, match="is not an .npz archive"):
        read_npz_images(tmp_path / "text.npz")


# -- PNG folders ------------------------------------------------------------------------------
def test_folder_of_gray_classes_in_natural_order(tmp_path):
    rng = _rng()
    expected = {}
    for cls in ("10", "2"):
        for name in ("img10.png", "img9.png"):
            pixels = rng.integers(0, 256, size=(3, 4), dtype=np.uint8)
            _png(tmp_path / cls / name, pixels)
            expected[(cls, name)] = pixels
    (tmp_path / ".DS_Store").write_text("ignored: hidden")
    data = read_image_folder(tmp_path)
    assert data.labels.tolist() == ["2", "2", "10", "10"]
    assert data.values.shape == (4, 1, 3, 4) and data.values.dtype == np.uint8
    np.testing.assert_array_equal(data.values[0, 0], expected[("2", "img9.png")])
    np.testing.assert_array_equal(data.values[3, 0], expected[("10", "img10.png")])


def test_folder_of_colour_images_drops_alpha(tmp_path):
    rgba = _rng().integers(0, 256, size=(3, 2, 4), dtype=np.uint8)
    _png(tmp_path / "a.png", rgba)
    _png(tmp_path / "b.png", rgba[..., :3])
    palette = Image.fromarray(rgba[..., :3]).convert("P")
    palette.save(tmp_path / "c.png")
    data = read_image_folder(tmp_path)
    assert data.labels is None and data.values.shape == (3, 3, 3, 2)
    np.testing.assert_array_equal(data.values[0], rgba[..., :3].transpose(2, 0, 1))
    np.testing.assert_array_equal(data.values[1], data.values[0])
    np.testing.assert_array_equal(
        data.values[2], np.asarray(palette.convert("RGB")).transpose(2, 0, 1)
    )


def test_folder_gray_variants_become_one_channel(tmp_path):
    _png(tmp_path / "a.png", np.full((2, 2, 2), 200, np.uint8))  # LA: alpha dropped
    Image.fromarray(np.eye(2, dtype=bool)).save(tmp_path / "b.png")  # 1-bit
    data = read_image_folder(tmp_path)
    assert data.values.shape == (2, 1, 2, 2)
    assert data.values[0].tolist() == [[[200, 200], [200, 200]]]
    assert data.values[1].tolist() == [[[255, 0], [0, 255]]]


def _folder(tmp_path: Path, files: dict[str, object]) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, np.ndarray):
            _png(target, content)
        elif isinstance(content, bytes):
            target.write_bytes(content)
        elif content == "dir":
            target.mkdir()
        elif content == "16bit-gray":
            Image.fromarray(np.full((2, 2), 1000, np.uint16)).save(target)
        elif content == "16bit-rgb":
            _png_16bit_rgb(target)
        elif content == "jpeg":
            Image.fromarray(np.zeros((2, 2), np.uint8)).save(target, format="JPEG")
    return root


G2 = np.zeros((2, 2), np.uint8)
G3 = np.zeros((3, 2), np.uint8)
RGB2 = np.zeros((2, 2, 3), np.uint8)


@pytest.mark.parametrize(
    ("files", "pattern"),
    [
        ({"a.png": G2, "b.png": G3}, r"b.png is 2x3 pixels.*a.png, the first image, is 2x2"),
        ({"a/1.png": G2, "b/1.png": RGB2}, r"b/1.png is 2x2 pixels.*RGB but .*grayscale"),
        ({"a.png": G2, "b.png": "16bit-gray"}, "b.png is a 16-bit image.*8-bit images only"),
        ({"a.png": "16bit-rgb"}, "a.png is a 16-bit image"),
        ({"a.png": G2, "notes.txt": b"x"}, "notes.txt is not a .png file"),
        ({"a.png": "jpeg"}, "a.png is a JPEG image, not a PNG"),
        ({"a.png": b"\x89PNG\r\n\x1a\nbroken"}, "a.png cannot be read as a PNG image"),
        ({"a/1.png": G2, "b.png": G2}, "both class sub-folders.*and files"),
        ({"a/1.png": G2, "a/deeper/2.png": G2}, "class folder .*a holds a sub-folder deeper"),
        ({"a/1.png": G2, "b": "dir"}, "b holds no PNG images"),
        ({}, "data holds no PNG images"),
    ],
)
def test_folder_errors_name_the_file(tmp_path, files, pattern):
    root = _folder(tmp_path, files)
    with pytest.raises(DataError, match=pattern):
        read_image_folder(root)


def test_folder_that_does_not_exist(tmp_path):
    with pytest.raises(DataError, match="does not exist or is not a folder"):
        read_image_folder(tmp_path / "nope")


# -- dispatch ---------------------------------------------------------------------------------
def test_read_images_dispatches_on_what_the_path_is(tmp_path):
    root = _folder(tmp_path, {"a.png": G2})
    assert read_images(root).values.shape == (1, 1, 2, 2)
    np.savez(tmp_path / "a.npz", x=np.zeros((2, 3, 3), np.uint8))
    assert read_images(tmp_path / "a.npz").values.shape == (2, 1, 3, 3)
    write_idx(np.zeros((2, 3, 3), np.uint8), tmp_path / "imgs.gz")
    assert read_images(tmp_path / "imgs.gz").values.shape == (2, 1, 3, 3)
    with pytest.raises(DataError, match="a single image is not a data set"):
        read_images(root / "a.png")
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="not a folder of PNG images, an .npz archive or an idx"):
        read_images(tmp_path / "t.csv")
    with pytest.raises(DataError, match="labels file is only read with idx images"):
        read_images(root, labels_path=tmp_path / "imgs.gz")
    with pytest.raises(DataError, match="does not exist"):
        read_images(tmp_path / "missing.npz")


# -- schema draft -----------------------------------------------------------------------------
def _labelled(values: np.ndarray, labels: list[str] | None) -> ArrayData:
    return ArrayData(values, None if labels is None else np.asarray(labels, dtype=object))


def test_draft_uint8_uses_the_format_range_and_flags_classes():
    data = _labelled(np.full((3, 3, 2, 2), 7, np.uint8), ["b", "a", "b"])
    schema = draft_image_schema(data)
    assert schema.kind == "image" and schema.shape == (3, 2, 2)
    assert [(c.name, c.lower, c.upper) for c in schema.channels] == [
        ("red", 0.0, 255.0),
        ("green", 0.0, 255.0),
        ("blue", 0.0, 255.0),
    ]
    assert schema.classes == ("a", "b") and schema.label == "label"
    assert schema.notes and "READ FROM THE PRIVATE DATA" in schema.notes[0]
    with pytest.raises(SchemaError, match="draft"):
        ArraySchema.from_dict(schema.to_dict())


def test_draft_without_labels_or_values_has_no_review_note():
    unlabelled = draft_image_schema(_labelled(np.zeros((2, 1, 2, 2), np.uint8), None))
    assert unlabelled.label is None and unlabelled.notes == () and unlabelled.is_complete
    data = _labelled(np.zeros((2, 1, 2, 2), np.uint8), ["0", "1"])
    blind = draft_image_schema(data, with_values=False)
    assert blind.classes is None and blind.notes == () and blind.label_prior == "dp"
    assert draft_image_schema(data, label=None).label is None


def test_draft_float_images_leave_bounds_to_declare_or_estimate():
    schema = draft_image_schema(_labelled(np.zeros((2, 1, 2, 2), np.float32), None))
    assert [(c.name, c.lower, c.upper) for c in schema.channels] == [("gray", None, None)]
    assert not schema.is_complete


def test_draft_refuses_one_class_and_bad_shapes():
    with pytest.raises(DataError, match="every record has the label 'x'.*label=None"):
        draft_image_schema(_labelled(np.zeros((2, 1, 2, 2), np.uint8), ["x", "x"]))
    with pytest.raises(DataError, match=r"1 or 3 channels; got \[2, 2, 2\]"):
        draft_image_schema(_labelled(np.zeros((2, 2, 2, 2), np.uint8), None))
