"""Image and time-series records, generated: checked against a schema, or refused cleanly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from property_support import assert_clean_error
from strategies import array_documents

from dpforge.data.arrays import ArrayData, validate_arrays
from dpforge.data.images import draft_image_schema
from dpforge.data.series import draft_series_schema
from dpforge.errors import DataError, DpforgeError
from dpforge.schema.array import ArraySchema, schema_from_dict

LABELS = st.sampled_from(["0", "1", "2", "cat", 3, 4.0, 0.5, None, "", "nan"])


@st.composite
def records(draw, shape: tuple[int, ...]) -> ArrayData:
    """Records of ``shape`` (sometimes another one), values with NaN, inf or out of range,
    labels from a small set (sometimes one class, sometimes numbers with fractions)."""
    n = draw(st.integers(1, 12))
    if draw(st.integers(0, 4)) == 0:
        shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dtype = draw(st.sampled_from([np.float64, np.uint8]))
    tame = st.floats(0, 1) if dtype is np.float64 else st.integers(0, 1)
    elements = tame if draw(st.booleans()) else None  # in range half the time, else anything
    values = draw(hnp.arrays(dtype, (n, *shape), elements=elements))
    labels = None
    if draw(st.booleans()):
        labels = np.array(draw(st.lists(LABELS, min_size=n, max_size=n)), dtype=object)
    return ArrayData(values, labels)


@settings(max_examples=60)
@given(st.data(), array_documents(), st.sampled_from(["error", "clip"]))
def test_records_pass_the_schema_or_are_refused_on_one_line(data, document, out_of_bounds):
    schema = schema_from_dict(document)
    try:
        checked = validate_arrays(data.draw(records(schema.shape)), schema, out_of_bounds)
    except DpforgeError as exc:
        assert isinstance(exc, DataError)
        assert_clean_error(exc)
        return
    except Exception as exc:  # noqa: BLE001 - a traceback for the user
        assert_clean_error(exc)
    assert checked.shape == schema.shape and np.isfinite(checked.values).all()
    if schema.label is not None:
        assert len(set(checked.labels)) >= 2
        assert set(checked.labels) <= set(schema.classes or checked.labels)


@given(st.data(), st.sampled_from(["image", "timeseries"]), st.booleans())
def test_drafts_of_records_are_schemas_or_one_line_refusals(data, kind, with_values):
    shape = (1, 4, 4) if kind == "image" else (2, 6)
    sample = data.draw(records(shape))
    try:
        if kind == "image":
            draft = draft_image_schema(sample, with_values=with_values)
        else:
            draft = draft_series_schema(sample, with_values=with_values)
    except DpforgeError as exc:
        assert_clean_error(exc)
        return
    except Exception as exc:  # noqa: BLE001 - a traceback for the user
        assert_clean_error(exc)
    assert isinstance(draft, ArraySchema)
    if draft.classes is not None:
        assert 2 <= len(draft.classes) <= 50


def test_a_single_class_is_refused_for_images_and_series():
    for kind, shape in (("image", [1, 2, 2]), ("timeseries", [1, 5])):
        schema = schema_from_dict(
            {"type": kind, "shape": shape, "channels": [{"name": "v", "lower": 0, "upper": 1}],
             "label": "y", "classes": ["a", "b"]}
        )  # fmt: skip
        values = np.zeros((4, *shape))
        one = ArrayData(values, np.array(["a"] * 4, dtype=object))
        try:
            validate_arrays(one, schema)
        except DataError as exc:
            assert "holds a single class" in assert_clean_error(exc)
        else:
            raise AssertionError(f"{kind}: a single class was accepted")
        validate_arrays(ArrayData(values, np.array(["a", "b"] * 2, dtype=object)), schema)


def test_a_continuous_series_label_is_refused():
    rng = np.random.default_rng(0)
    sample = ArrayData(rng.normal(size=(40, 1, 5)), rng.normal(size=40).astype(object))
    try:
        draft_series_schema(sample)
    except DataError as exc:
        assert "holds numbers with fractions" in assert_clean_error(exc)
    else:
        raise AssertionError("a continuous label was drafted as classes")
