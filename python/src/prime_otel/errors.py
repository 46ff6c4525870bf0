"""The exceptions ``prime_runs`` raises at the caller, under the same names."""


class PrimeRunsError(Exception):
    """Base of every error this package raises."""


class ConfigurationError(PrimeRunsError):
    """``init()`` was given something it cannot send: names the argument."""


class RunFinishedError(PrimeRunsError):
    """A log call on a run that is already finished."""
