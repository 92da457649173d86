"""Data: the built-in scenario (`default.yaml`) that `allot simulate` runs without arguments."""
