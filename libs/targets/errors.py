"""Errors raised while loading target declarations (configuration errors are raised, not data:
a bad declaration is an operator mistake that must stop the job before it reads anything)."""

from __future__ import annotations

from libs.settings.errors import ConfigError


class TargetConfigError(ConfigError):
    """A target declaration is invalid. The message names the file and the field. A
    ConfigError like every configuration problem, so entry points report it the same way (one
    line, before a Spark session starts).

    >>> str(TargetConfigError("conf/targets.yaml", "targets[0].apply", "must be rows, statements or both"))
    'conf/targets.yaml: targets[0].apply: must be rows, statements or both'
    """

    def __init__(self, path: str, field: str, message: str):
        self.path = path
        self.field = field
        self.message = message
        super().__init__(f"{path}: {field}: {message}" if field else f"{path}: {message}")
