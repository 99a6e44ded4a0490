"""Reading private image sets: idx files (MNIST), ``.npz`` arrays and folders of PNG files.

Every reader returns :class:`~dpforge.data.arrays.ArrayData` with values shaped
``(n, channels, height, width)`` and labels as text (``None`` when the source has none).
Errors name the file, the record and the value, and say what to do.

Nothing here computes statistics of the images. :func:`draft_image_schema` takes the pixel
range from the *format* (0..255 for 8-bit data is public knowledge, not a property of these
images) and marks the classes it read from the data for review, because the list of classes is
itself data-dependent metadata (design rule 2).
"""

from __future__ import annotations

import gzip
import math
import re
import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from dpforge.data.arrays import ArrayData
from dpforge.data.tables import MISSING_TOKENS, canonical_text, check_label_values
from dpforge.errors import DataError, private
from dpforge.schema.array import ArraySchema, Channel, image_schema
from dpforge.schema.table import REVIEW_KEY
from dpforge.storage import atomic_write

GZIP_MAGIC = b"\x1f\x8b"
PNG_SUFFIX = ".png"
VALUES_KEYS = ("x", "images", "values")
LABELS_KEYS = ("y", "labels")

# idx type code -> (name in the format's description, big-endian numpy dtype)
IDX_TYPES: dict[int, tuple[str, np.dtype]] = {
    0x08: ("unsigned byte", np.dtype("u1")),
    0x09: ("signed byte", np.dtype("i1")),
    0x0B: ("short", np.dtype(">i2")),
    0x0C: ("int", np.dtype(">i4")),
    0x0D: ("float", np.dtype(">f4")),
    0x0E: ("double", np.dtype(">f8")),
}

ARRAY_DRAFT_WARNING = (
    "DRAFT: the label classes below were READ FROM THE PRIVATE DATA and are NOT differentially "
    "private. Replace them with public knowledge (e.g. the ten digits of MNIST), or set "
    "'classes' to null so that dpforge estimates them under DP and charges the budget. Delete "
    f"this '{REVIEW_KEY}' entry when done: dpforge refuses a schema that still has it."
)


# -- small shared helpers (also used by dpforge.data.series and dpforge.data.export) --------
def natural_key(text: str) -> list[str | int]:
    """Sort key that puts '2' before '10' and 'img9.png' before 'img10.png'."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)]


def sorted_classes(labels: np.ndarray) -> tuple[str, ...]:
    """The distinct labels in natural order (read from the data: private, see module doc)."""
    return tuple(sorted({str(v) for v in labels}, key=natural_key))


def require_file(path: Path, what: str = "data file") -> None:
    if not path.exists():
        raise DataError(f"{what} {path} does not exist")
    if not path.is_file():
        raise DataError(f"{what} {path} is not a file")


def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` archive, loaded WITHOUT unpickling (pickles can run code)."""
    path = Path(path)
    require_file(path)
    if not zipfile.is_zipfile(path):
        raise DataError(f"{path} is not an .npz archive (numpy.savez writes those)")
    arrays: dict[str, np.ndarray] = {}
    try:
        with np.load(path, allow_pickle=False) as archive:
            for key in archive.files:
                arrays[key] = _npz_member(archive, key, path)
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise DataError(f"{path} is a damaged .npz archive ({exc}); write it again") from None
    if not arrays:
        raise DataError(f"{path} holds no arrays")
    return arrays


def _npz_member(archive: np.lib.npyio.NpzFile, key: str, path: Path) -> np.ndarray:
    try:
        return archive[key]
    except ValueError:
        raise DataError(
            f"{path}: array '{key}' holds Python objects, which dpforge does not load (loading "
            "them can run code); save numbers, and labels as a numpy text array (dtype str)"
        ) from None


def pick_array(
    arrays: dict[str, np.ndarray],
    key: str | None,
    candidates: Sequence[str],
    path: Path,
    what: str,
    *,
    fallback_single: bool,
) -> str | None:
    """The key of the array holding ``what``: ``key`` if given, else the first of ``candidates``.

    With ``fallback_single``, an archive of exactly one array answers with that array.
    Returns None when nothing fits and no key was given (the caller decides if that is fine).
    """
    if key is not None:
        if key not in arrays:
            raise DataError(
                f"{path} has no array '{key}' for the {what}; it holds {sorted(arrays)}"
            )
        return key
    for candidate in candidates:
        if candidate in arrays:
            return candidate
    if fallback_single and len(arrays) == 1:
        return next(iter(arrays))
    return None


def labels_as_text(labels: np.ndarray, n: int, where: str) -> np.ndarray:
    """One label per record as text (1 and 1.0 are the same class '1'); dtype object."""
    if labels.ndim != 1:
        hint = " (one-hot? pass the class index per record)" if labels.ndim == 2 else ""
        raise DataError(
            f"{where}: labels must be one value per record, shape ({n},); got shape "
            f"{list(labels.shape)}{hint}"
        )
    if len(labels) != n:
        raise DataError(f"{where}: {n} records but {len(labels)} labels: give one per record")
    if labels.dtype.kind in "iub":
        return np.asarray([str(int(v)) for v in labels.tolist()], dtype=object)
    if labels.dtype.kind not in "fUS":
        raise DataError(f"{where}: labels must be numbers or text, got dtype {labels.dtype}")
    texts = [canonical_text(v.decode() if isinstance(v, bytes) else v) for v in labels.tolist()]
    for record, text in enumerate(texts, start=1):
        if text.lower() in MISSING_TOKENS:
            raise DataError(
                f"{where}: record {private(record)} (index {private(record - 1)}) has no label "
                f"({private(text, 'r')}); "
                "give every record a label or read the data without labels"
            )
    return np.asarray(texts, dtype=object)


# -- idx --------------------------------------------------------------------------------------
def _read_maybe_gzip(path: Path) -> bytes:
    """The file's bytes, decompressed when it is a gzip file (decided by content, not name)."""
    require_file(path)
    raw = path.read_bytes()
    if raw[:2] != GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{path} is a gzip file that cannot be decompressed ({exc}); the download is "
            "probably incomplete: download it again"
        ) from None


def _idx_header(raw: bytes, path: Path) -> tuple[np.dtype, tuple[int, ...], int]:
    if len(raw) < 4:
        raise DataError(f"{path} has {len(raw)} byte(s): too short to be an idx file")
    if raw[0] != 0 or raw[1] != 0:
        raise DataError(
            f"{path} does not start with an idx magic number (first bytes "
            f"{raw[:4].hex(' ')}, expected 00 00 <type> <dims>): is it an idx file such as "
            "MNIST's train-images-idx3-ubyte(.gz)?"
        )
    code, ndim = raw[2], raw[3]
    if code not in IDX_TYPES:
        known = ", ".join(f"0x{c:02X} ({name})" for c, (name, _) in IDX_TYPES.items())
        raise DataError(f"{path}: unknown idx data type code 0x{code:02X}; the format has {known}")
    if ndim == 0:
        raise DataError(f"{path}: the idx header declares 0 dimensions; the file is damaged")
    offset = 4 + 4 * ndim
    if len(raw) < offset:
        raise DataError(
            f"{path}: the idx header declares {ndim} dimensions ({offset} header bytes) but the "
            f"file ends after {len(raw)} bytes; it is truncated: download it again"
        )
    dims = struct.unpack(f">{ndim}I", raw[4:offset])
    return IDX_TYPES[code][1], tuple(int(d) for d in dims), offset


def read_idx(path: str | Path) -> np.ndarray:
    """Read an idx file (MNIST's format), gzip-compressed or not, as a native-endian array.

    The header (magic number with type code and number of dimensions, then the sizes) is
    checked against the file's length, so that a truncated or padded download is refused
    instead of silently yielding fewer or garbage records.
    """
    path = Path(path)
    raw = _read_maybe_gzip(path)
    dtype, dims, offset = _idx_header(raw, path)
    count = math.prod(dims)
    expected = offset + count * dtype.itemsize
    if len(raw) != expected:
        problem = "is truncated" if len(raw) < expected else "has trailing bytes"
        raise DataError(
            f"{path}: the idx header declares dimensions {list(dims)} ({count} values of "
            f"{dtype.itemsize} byte(s), {expected} bytes with the header) but the file holds "
            f"{len(raw)} bytes: it {problem}; download or write it again"
        )
    values = np.frombuffer(raw, dtype=dtype, count=count, offset=offset).reshape(dims)
    return values.astype(dtype.newbyteorder("="))


def write_idx(array: np.ndarray, path: str | Path, *, overwrite: bool = False) -> None:
    """Write ``array`` as an idx file (gzip-compressed when the name ends in ``.gz``).

    Supported dtypes are the format's: uint8, int8, int16, int32, float32, float64. The write
    is atomic and refuses an existing file unless ``overwrite``.
    """
    array = np.asarray(array)
    codes = {dtype.newbyteorder("="): code for code, (_, dtype) in IDX_TYPES.items()}
    code = codes.get(array.dtype.newbyteorder("="))
    if code is None or not 1 <= array.ndim <= 255:
        raise DataError(
            f"cannot write {path}: idx holds 1 to 255 dimensions of uint8, int8, int16, int32, "
            f"float32 or float64; got {array.ndim} dimension(s) of {array.dtype}"
        )
    big_endian = IDX_TYPES[code][1]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    payload = header + np.ascontiguousarray(array, dtype=big_endian).tobytes()
    if str(path).endswith(".gz"):
        payload = gzip.compress(payload, mtime=0)
    atomic_write(Path(path), lambda tmp: tmp.write_bytes(payload), overwrite=overwrite)


def read_idx_images(images_path: str | Path, labels_path: str | Path | None = None) -> ArrayData:
    """MNIST-style idx images (n, height, width) of bytes, and optionally their idx labels.

    Values come back as uint8 ``(n, 1, height, width)``; labels as text ('0'..'9' for MNIST).
    """
    images_path = Path(images_path)
    images = read_idx(images_path)
    if images.ndim != 3:
        hint = " (is this the labels file?)" if images.ndim == 1 else ""
        raise DataError(
            f"{images_path}: idx images must have 3 dimensions (images, height, width); this "
            f"file has {list(images.shape)}{hint}"
        )
    if images.dtype != np.uint8:
        raise DataError(
            f"{images_path}: idx images must be unsigned bytes (type code 0x08), got "
            f"{images.dtype}; save other pixel types as an .npz array instead"
        )
    if images.shape[0] == 0:
        raise DataError(f"{images_path} holds no images")
    labels = None if labels_path is None else _idx_labels(Path(labels_path), images_path, images)
    return ArrayData(np.ascontiguousarray(images[:, None]), labels)


def _idx_labels(labels_path: Path, images_path: Path, images: np.ndarray) -> np.ndarray:
    labels = read_idx(labels_path)
    if labels.ndim != 1:
        raise DataError(
            f"{labels_path}: idx labels must have 1 dimension (one per image); this file has "
            f"{list(labels.shape)} (is it an images file?)"
        )
    if len(labels) != len(images):
        raise DataError(
            f"{labels_path} holds {len(labels)} labels but {images_path} holds {len(images)} "
            "images: pass the labels file that belongs to these images"
        )
    return labels_as_text(labels, len(images), str(labels_path))


# -- npz ------------------------------------------------------------------------------------
def read_npz_images(
    path: str | Path,
    values_key: str | None = None,
    labels_key: str | None = None,
    *,
    channels: str | None = None,
) -> ArrayData:
    """Images from an ``.npz`` archive: (n, H, W), (n, H, W, C) or (n, C, H, W), C in {1, 3}.

    ``values_key``: the array of images; by default the first of 'x', 'images', 'values', or
    the only array in the archive. ``labels_key``: the labels; by default 'y' or 'labels' when
    present, else no labels.

    Channel-last versus channel-first (4-D arrays) is decided from the shape: the axis of size
    1 or 3 among axis 1 and axis 3 holds the channels. When both or neither qualify (e.g. a
    3-pixel-wide image) the shape cannot tell, and ``channels="first"`` or ``"last"`` must say.
    uint8 values are kept as they are (pixel range 0..255 is then public); any other numbers
    become float32, whose range is not known and will be declared or estimated under DP.
    """
    path = Path(path)
    arrays = read_npz(path)
    key = pick_array(arrays, values_key, VALUES_KEYS, path, "images", fallback_single=True)
    if key is None:
        raise DataError(
            f"{path} holds arrays {sorted(arrays)}: none is named {list(VALUES_KEYS)}, so "
            "dpforge cannot tell which holds the images: pass values_key"
        )
    where = f"{path}, array '{key}'"
    values = _pixel_values(_channels_first(arrays[key], channels, where), where)
    lkey = pick_array(
        {k: v for k, v in arrays.items() if k != key},
        labels_key,
        LABELS_KEYS,
        path,
        "labels",
        fallback_single=False,
    )
    labels = (
        None if lkey is None else labels_as_text(arrays[lkey], len(values), f"{path}, '{lkey}'")
    )
    return ArrayData(values, labels)


def _channels_first(values: np.ndarray, channels: str | None, where: str) -> np.ndarray:
    if channels not in (None, "first", "last"):
        raise DataError(f"channels must be 'first', 'last' or None (decide), got {channels!r}")
    if values.ndim == 3:
        return values[:, None]
    if values.ndim != 4:
        raise DataError(
            f"{where}: images must be shaped (n, H, W), (n, H, W, C) or (n, C, H, W); got "
            f"{list(values.shape)}"
        )
    if channels is None:
        channels = _guess_channel_axis(values.shape, where)
    if channels == "last":
        values = values.transpose(0, 3, 1, 2)
    if values.shape[1] not in (1, 3):
        raise DataError(
            f"{where}: {values.shape[1]} channels in shape {list(values.shape)} (channels "
            f"{channels}); images need 1 (gray) or 3 (RGB) channels"
            + ("; drop the alpha channel" if values.shape[1] == 4 else "")
        )
    return np.ascontiguousarray(values)


def _guess_channel_axis(shape: tuple[int, ...], where: str) -> str:
    first, last = shape[1] in (1, 3), shape[3] in (1, 3)
    if first and last:
        raise DataError(
            f"{where}: shape {list(shape)} could be channel-first or channel-last; pass "
            "channels='first' or channels='last'"
        )
    if not (first or last):
        alpha = "; drop the alpha channel" if 4 in (shape[1], shape[3]) else ""
        raise DataError(
            f"{where}: shape {list(shape)} has no axis of 1 or 3 channels at position 1 "
            f"(channel-first) or 3 (channel-last){alpha}"
        )
    return "first" if first else "last"


def _pixel_values(values: np.ndarray, where: str) -> np.ndarray:
    if len(values) == 0:
        raise DataError(f"{where} holds no images")
    if values.dtype == np.uint8:
        return values
    if values.dtype.kind not in "iubf":
        raise DataError(f"{where}: pixel values must be numbers, got dtype {values.dtype}")
    values = values.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(values.reshape(len(values), -1)).all(axis=1))
    if bad.size:
        record = int(bad[0])
        value = values[record][~np.isfinite(values[record])][0]
        raise DataError(
            f"{where}: record {private(record + 1)} (index {private(record)}) holds the value "
            f"{private(value)}; every "
            f"pixel must be a finite number ({private(bad.size)} record(s) in all): fix or "
            "remove them"
        )
    return values


# -- folders of PNG files ---------------------------------------------------------------------
def read_image_folder(path: str | Path) -> ArrayData:
    """A folder of PNG images: one sub-folder per class (class = sub-folder name), or the PNG
    files directly in the folder (no labels).

    Grayscale ('L', '1', 'LA') becomes 1 channel, colour ('RGB', 'RGBA', palette) 3 channels;
    an alpha channel is DROPPED (transparency is not modelled). Only 8-bit images are read; all
    must share the size and the number of channels of the first one. Files are read in natural
    order (class folders by name, then '2.png' before '10.png'); hidden files are ignored.
    """
    root = Path(path)
    if not root.is_dir():
        raise DataError(f"image folder {root} does not exist or is not a folder")
    files, labels = _list_images(root)
    first = _load_png(files[0])
    values = np.empty((len(files), *first.shape), dtype=np.uint8)
    values[0] = first
    for i, file in enumerate(files[1:], start=1):
        image = _load_png(file)
        if image.shape != first.shape:
            raise DataError(_mismatch(file, image.shape, files[0], first.shape))
        values[i] = image
    return ArrayData(values, labels)


def _visible(folder: Path) -> list[Path]:
    entries = [e for e in folder.iterdir() if not e.name.startswith(".")]
    return sorted(entries, key=lambda e: natural_key(e.name))


def _list_images(root: Path) -> tuple[list[Path], np.ndarray | None]:
    entries = _visible(root)
    folders = [e for e in entries if e.is_dir()]
    files = [e for e in entries if not e.is_dir()]
    if folders and files:
        raise DataError(
            f"{root} holds both class sub-folders ({folders[0].name}, ...) and files "
            f"({files[0].name}, ...): put every image in a class sub-folder, or none"
        )
    if not folders:
        _check_png_files(files, root)
        return files, None
    paths: list[Path] = []
    labels: list[str] = []
    for folder in folders:
        inside = _class_files(folder)
        paths += inside
        labels += [folder.name] * len(inside)
    return paths, np.asarray(labels, dtype=object)


def _class_files(folder: Path) -> list[Path]:
    inside = _visible(folder)
    nested = [e for e in inside if e.is_dir()]
    if nested:
        raise DataError(
            f"class folder {folder} holds a sub-folder {nested[0].name}: only one level of "
            "class folders is read; move its images up or remove it"
        )
    _check_png_files(inside, folder)
    return inside


def _check_png_files(files: list[Path], folder: Path) -> None:
    if not files:
        raise DataError(f"{folder} holds no PNG images: add images or remove the folder")
    for file in files:
        if file.suffix.lower() != PNG_SUFFIX:
            raise DataError(
                f"{file} is not a .png file: only PNG images are read; convert it to PNG or "
                "move it out of the folder"
            )


def _load_png(file: Path) -> np.ndarray:
    """One 8-bit PNG as uint8 (channels, height, width)."""
    try:
        with Image.open(file) as image:
            if image.format != "PNG":
                raise DataError(f"{file} is a {image.format} image, not a PNG: convert it to PNG")
            _refuse_16_bit(image, file)
            return _pixels(image, file)
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise DataError(f"{file} cannot be read as a PNG image ({exc}); replace the file") from None


def _refuse_16_bit(image: Image.Image, file: Path) -> None:
    # A PNG tile's 4th entry is its raw mode, e.g. 'I;16B' or 'RGB;16B' for 16-bit samples.
    deep = image.mode.startswith("I") or image.mode == "F"
    deep = deep or any(";16" in str(tile[3]) for tile in image.tile)
    if deep:
        raise DataError(
            f"{file} is a 16-bit image: dpforge reads 8-bit images only; convert it to 8 bits, "
            "or save the values as a float array in an .npz file (read_npz_images)"
        )


def _pixels(image: Image.Image, file: Path) -> np.ndarray:
    mode = image.mode
    if mode in ("1", "L", "LA"):
        return np.asarray(image.convert("L"), dtype=np.uint8)[None]
    if mode in ("RGB", "RGBA", "P", "PA"):
        rgb = np.asarray(image.convert("RGB" if mode == "RGB" else "RGBA"), dtype=np.uint8)
        return np.ascontiguousarray(rgb[..., :3].transpose(2, 0, 1))
    raise DataError(
        f"{file} has pixel mode '{mode}', which dpforge does not read: save it as an 8-bit "
        "grayscale or RGB PNG"
    )


def _describe(shape: tuple[int, ...]) -> str:
    kind = "grayscale" if shape[0] == 1 else "RGB"
    return f"{shape[2]}x{shape[1]} pixels (width x height), {kind}"


def _mismatch(file: Path, shape: tuple[int, ...], first: Path, first_shape: tuple[int, ...]) -> str:
    return (
        f"{file} is {_describe(shape)} but {first}, the first image, is "
        f"{_describe(first_shape)}: all images must have the same size and channels; resize "
        "or convert them"
    )


# -- dispatch and schema draft --------------------------------------------------------------
def read_images(path: str | Path, labels_path: str | Path | None = None) -> ArrayData:
    """Read images from a folder of PNGs, an ``.npz`` archive or an idx file (optionally .gz).

    ``labels_path`` is for idx only (the separate labels file); the other formats hold their
    labels themselves.
    """
    path = Path(path)
    if path.is_dir():
        _no_labels_path(labels_path, path, "a folder's labels are its class sub-folders")
        return read_image_folder(path)
    require_file(path)
    if path.suffix.lower() == ".npz":
        _no_labels_path(labels_path, path, "an .npz archive holds its labels (labels_key)")
        return read_npz_images(path)
    with path.open("rb") as handle:
        start = handle.read(2)
    if start in (GZIP_MAGIC, b"\x00\x00"):
        return read_idx_images(path, labels_path)
    single = " (a single image is not a data set: put the images in a folder)"
    raise DataError(
        f"{path} is not a folder of PNG images, an .npz archive or an idx file"
        + (single if path.suffix.lower() == PNG_SUFFIX else "")
    )


def _no_labels_path(labels_path: str | Path | None, path: Path, why: str) -> None:
    if labels_path is not None:
        raise DataError(f"a labels file is only read with idx images, not with {path}: {why}")


def draft_image_schema(
    data: ArrayData, label: str | None = "label", *, with_values: bool = True
) -> ArraySchema:
    """Draft the public schema of an image set.

    uint8 data get the pixel range 0..255 on every channel: that is the FORMAT's range, public
    knowledge, not read from the data. Other (float) data get null bounds: declare a public
    range or let dpforge estimate it under DP. Classes present in the data are put in the draft
    (with ``with_values``) together with a review note, because they were read from the private
    data; ``fit`` refuses the schema until a person has reviewed them. ``label=None`` drafts an
    unconditional schema and ignores the labels.
    """
    shape = data.shape
    if len(shape) != 3 or shape[0] not in (1, 3):
        raise DataError(
            f"images must be shaped (channels, height, width) with 1 or 3 channels; got "
            f"{list(shape)}"
        )
    schema = image_schema((shape[0], shape[1], shape[2]), label=None)
    if data.values.dtype != np.uint8:
        schema = schema.with_channels(tuple(Channel(c.name) for c in schema.channels))
    return draft_label(schema, data, label, with_values)


def draft_label(
    schema: ArraySchema, data: ArrayData, label: str | None, with_values: bool
) -> ArraySchema:
    """Add the label to a drafted schema: classes read from the data get the review note."""
    if label is None or data.labels is None:
        return schema
    check_label_values(list(data.labels), f"the label '{label}'")
    classes = sorted_classes(data.labels) if with_values else None
    if classes is not None and len(classes) < 2:
        raise DataError(
            f"every record has the label {private(classes[0], 'r')}; a conditional model needs "
            "at least "
            "two classes: draft the schema without a label (label=None)"
        )
    notes = (ARRAY_DRAFT_WARNING,) if classes is not None else ()
    return replace(schema, label=label, classes=classes, label_prior="dp", notes=notes)
