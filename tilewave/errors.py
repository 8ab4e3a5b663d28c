"""Errors a user can act on. Both derive from ValueError so callers that catch bad input keep working."""


class TilewaveError(ValueError):
    """Base class of every error tilewave raises on purpose."""


class WeightsError(TilewaveError):
    """A weights file is missing, truncated, corrupt, of the wrong model, or does not fit the model."""


class InputError(TilewaveError):
    """An argument (tokens, style vector, speed, text, voice...) is outside what the model accepts."""
