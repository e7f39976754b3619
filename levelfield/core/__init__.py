"""Everything framework-independent: types, protocol, datasets, matching, metrics, runner, results."""
