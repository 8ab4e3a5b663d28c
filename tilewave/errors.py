"""Errors a user can act on: each says what was wrong, with the value, and what to do."""


class TilewaveError(ValueError):
    """Base of every error tilewave raises for bad input, weights or configuration."""


class WeightsError(TilewaveError):
    """A weights file is missing, truncated, corrupt, of the wrong model, or lacks a parameter."""


class InputError(TilewaveError):
    """Text, a voice, a speed, a tensor or an option that cannot be used as given."""
