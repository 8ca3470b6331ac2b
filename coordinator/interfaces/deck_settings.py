"""The deck's settings-file routes: list, read, save and check a rating's settings or a
campaign file in the settings directory."""

import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from bgbench.coordinator.campaign import load_campaign
from bgbench.coordinator.execution.checkconfig import check_settings_file
from bgbench.coordinator.interfaces.deck_state import NAME, SETTINGS_LIMIT, Deck, DeckState
from bgbench.errors import BGBenchError, UserError
from bgbench.inputs import open_output, read_bounded_text

router = APIRouter()


class SettingsText(BaseModel):
    name: str = Field(max_length=200)
    text: str = Field(max_length=SETTINGS_LIMIT)
    kind: str = "rate"  # rate: a rating's settings; campaign: a campaign file


def check_campaign(name: str, text: str, directory: Path) -> str:
    """The campaign file `text` checked as `bgbench campaign check` does ("" when every job
    is valid, else the first error in one line). It is checked where it is saved, so the
    files it includes resolve the same."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", suffix=".yaml", prefix=".check-", dir=directory, encoding="utf-8"
    ) as f:
        f.write(text)
        f.flush()
        try:
            campaign = load_campaign(Path(f.name))
        except BGBenchError as exc:
            return str(exc).replace(f.name, name).splitlines()[0]
    if campaign.invalid:
        more = len(campaign.invalid) - 1
        first = campaign.invalid[0].error.replace(f.name, name).splitlines()[0]
        return first + (f" (and {more} more invalid jobs)" if more else "")
    return ""


def check_text(name: str, text: str) -> str:
    """The settings `text` (TOML or YAML by `name`) checked as check-config does: "" when
    valid, else the one-line error."""
    suffix = Path(name).suffix if NAME.fullmatch(name) else ".toml"
    with tempfile.TemporaryDirectory(prefix="bgbench-deck-") as tmp:
        path = Path(tmp) / f"settings{suffix}"
        path.write_text(text, encoding="utf-8")
        try:
            check_settings_file(path, [])
        except BGBenchError as exc:
            return str(exc).replace(f" in {path}", "").replace(str(path), name)
        except (ValueError, TypeError) as exc:  # a parser's own complaint
            return f"invalid settings: {exc}".splitlines()[0]
    return ""


def check(deck: DeckState, kind: str, name: str, text: str) -> str:
    """A rating's settings or a campaign file (by `kind`) checked: "" when valid."""
    if kind == "campaign":
        return check_campaign(name, text, deck.config.settings_dir)
    return check_text(name, text)


@router.get("/api/settings")
def list_settings(deck: Deck) -> dict[str, list[str]]:
    return {"names": deck.saved_names()}


@router.get("/api/settings/{name}")
def read_settings(name: str, deck: Deck) -> dict[str, str]:
    path = deck.settings_file(name)
    if not path.is_file():
        raise UserError(f"no settings file {name} in {deck.config.settings_dir}")
    return {"name": name, "text": read_bounded_text(path, SETTINGS_LIMIT, "settings file")}


@router.post("/api/settings")
def save_settings(body: SettingsText, deck: Deck) -> dict[str, str]:
    path = deck.settings_file(body.name)
    deck.config.settings_dir.mkdir(parents=True, exist_ok=True)
    with open_output(path, "settings file") as f:  # never into a FIFO a user left there
        f.write(body.text)
    return {"name": body.name}


@router.post("/api/validate")
def validate(body: SettingsText, deck: Deck) -> dict[str, Any]:
    message = check(deck, body.kind, body.name, body.text)
    return {"valid": not message, "message": message or "valid"}
