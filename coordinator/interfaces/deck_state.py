"""What every deck route shares: its configuration, its jobs and the anti-forgery token,
held on `app.state` and handed to a route as the `Deck` dependency."""

import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse

from bgbench.coordinator.interfaces.deck_guard import HostRule
from bgbench.coordinator.interfaces.deck_jobs import Jobs
from bgbench.coordinator.storage.location import Location
from bgbench.errors import UserError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,80}\.(toml|yaml|yml)")  # whole names only
SETTINGS_LIMIT = 1 << 20  # bytes of one settings or campaign file the deck reads or saves


@dataclass(frozen=True)
class DeckConfig:
    results: Path  # the results store's directory the jobs record into
    settings_dir: Path  # where edited settings files are saved
    hosts: HostRule  # the Host values it answers (its address, loopback names, --allow-host)
    token: str | None = None
    store: Location | None = None  # a PostgreSQL store's URL (else the results directory's)

    @property
    def where(self) -> Location:
        """The results store the deck reads and its jobs record into."""
        return self.store if self.store is not None else self.results


@dataclass(frozen=True)
class DeckState:
    config: DeckConfig
    jobs: Jobs
    csrf: str  # the anti-forgery token the deck's pages embed

    def settings_file(self, name: str) -> Path:
        if not NAME.fullmatch(name):
            raise UserError(
                f"settings name {name!r}: use letters, digits, '.', '-' or '_', ending in "
                ".toml, .yaml or .yml"
            )
        return self.config.settings_dir / name

    def saved_names(self) -> list[str]:
        directory = self.config.settings_dir
        if not directory.is_dir():
            return []
        return sorted(p.name for p in directory.iterdir() if NAME.fullmatch(p.name))


def deck_state(request: Request) -> DeckState:
    state: DeckState = request.app.state.deck
    return state


Deck = Annotated[DeckState, Depends(deck_state)]


def new_nonce() -> str:
    return secrets.token_urlsafe(16)


def html_page(content: str, nonce: str) -> HTMLResponse:
    policy = (
        f"default-src 'none'; connect-src 'self'; img-src 'self' data:; "
        f"style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; base-uri 'none'; "
        "form-action 'self'"
    )
    headers = {"Content-Security-Policy": policy, "Referrer-Policy": "no-referrer"}
    return HTMLResponse(content, headers=headers)
