"""Where results are recorded: a results directory (its bgbench.sqlite, the default) or a
PostgreSQL database named by a `postgresql://` URL (`--results URL`, or `results.url` in
the settings), shared by a team's coordinators.

A URL's password is best given in PGPASSWORD or a pgpass file; one written in the URL is
accepted, but every place the URL is shown or recorded shows it redacted (`str(url)`).
"""

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bgbench.coordinator.configuration.redaction import redact_text
from bgbench.errors import UserError

SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True)
class ResultsURL:
    """A PostgreSQL results store. `dsn` holds the URL as given (a password too): it is
    handed to libpq only; str() is the URL with its password redacted."""

    dsn: str = field(repr=False)

    def __str__(self) -> str:
        return redact_text(self.dsn)

    def __repr__(self) -> str:
        return f"ResultsURL({str(self)!r})"

    @property
    def password(self) -> str | None:
        return urlsplit(self.dsn).password


Location = Path | ResultsURL


class NoResultsStore(UserError):
    """Nothing was recorded where --results points yet."""


def for_child(where: Location) -> tuple[str, dict[str, str]]:
    """The `--results` argument that names `where` to a bgbench subprocess, and the
    environment it needs beside it: a URL's password goes in PGPASSWORD, never on a
    command line (which any user of the machine can read)."""
    if isinstance(where, Path):
        return str(where), {}
    parts = urlsplit(where.dsn)
    if parts.password is None:
        return where.dsn, {}
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    bare = parts._replace(netloc=f"{user}@{netloc[1]}").geturl()
    return bare, {"PGPASSWORD": unquote(parts.password)}


def is_url(value: str) -> bool:
    return "://" in value


def results_url(value: str, what: str = "--results") -> ResultsURL:
    """A `postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE` URL, or one line naming
    what is wrong with it (the URL shown redacted)."""
    shown = redact_text(value)
    try:
        parts = urlsplit(value)
        port = parts.port  # a port that is no number raises here
    except ValueError as exc:
        raise UserError(f"{what} {shown}: not a URL ({exc})") from None
    if parts.scheme.lower() not in SCHEMES:
        raise UserError(
            f"{what} {shown}: scheme {parts.scheme!r} is not a results store: give a "
            "directory, or a postgresql://USER@HOST:PORT/DATABASE URL"
        )
    if not parts.hostname:
        raise UserError(f"{what} {shown}: no host: give postgresql://USER@HOST:PORT/DATABASE")
    if not parts.path.strip("/") or "/" in parts.path.strip("/"):
        raise UserError(f"{what} {shown}: name one database: postgresql://USER@HOST:PORT/DATABASE")
    if port == 0:
        raise UserError(f"{what} {shown}: port 0 is no server's port")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise UserError(f"{what} {shown}: holds white space or control characters")
    return ResultsURL(value)


def location(value: "str | Path | ResultsURL | None", default: Path = Path("results")) -> Location:
    """What `--results` names: a ResultsURL for a URL, else a directory (not yet checked)."""
    if value is None:
        return default
    if isinstance(value, ResultsURL):
        return value
    if isinstance(value, str) and is_url(value):
        return results_url(value)
    return Path(value)
