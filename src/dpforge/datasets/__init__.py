"""Loaders of the benchmark and demo data sets, one module per data set family.

Data read by path (never copied into the repository) are found through
:func:`dpforge.datasets.files.resolve_data_dir`. Each loader returns ``(train, test, schema)``
with a schema that declares public only what the data's own documentation makes public.

* :mod:`~dpforge.datasets.adult`: UCI Adult (census income), by path;
* :mod:`~dpforge.datasets.thyroid`: UCI thyroid "ann", by path;
* :mod:`~dpforge.datasets.breast_cancer`: scikit-learn's breast cancer table (offline);
* :mod:`~dpforge.datasets.images`: MNIST / Fashion-MNIST (by path), scikit-learn's digits;
* :mod:`~dpforge.datasets.series`: sktime's ItalyPowerDemand (offline).
"""
