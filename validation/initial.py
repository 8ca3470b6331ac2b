"""Initial values of tracked items: what each item held before the experiment began."""

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class InitialValues:
    """Per item kind: sorted ids and their values; optionally one default for all others."""

    by_kind: dict[int, tuple[np.ndarray, np.ndarray]]
    default: int | None = None

    def lookup(self, kinds: np.ndarray, ids: np.ndarray) -> np.ndarray:
        out = np.empty(len(ids), dtype=np.int64)
        for kind in np.unique(kinds).tolist():
            mask = kinds == kind
            if kind not in self.by_kind:
                if self.default is None:
                    raise ValueError(f"no initial values for item kind {kind}")
                out[mask] = self.default
                continue
            known_ids, values = self.by_kind[kind]
            wanted = ids[mask]
            pos = np.searchsorted(known_ids, wanted)
            clipped = np.minimum(pos, max(len(known_ids) - 1, 0))
            found = (
                (pos < len(known_ids)) & (known_ids[clipped] == wanted)
                if len(known_ids)
                else (np.zeros(len(wanted), dtype=bool))
            )
            if not found.all() and self.default is None:
                raise ValueError(f"item kind {kind} id {wanted[~found][0]} has no initial value")
            vals = np.full(len(wanted), self.default or 0, dtype=np.int64)
            if len(known_ids):
                vals[found] = values[clipped[found]]
            out[mask] = vals
        return out


def save_initial(path: Path, initial: InitialValues) -> None:
    """Write initial values next to a log (npz: ids_<kind> and values_<kind> per item kind)."""
    arrays: dict[str, np.ndarray] = {}
    for kind, (ids, values) in initial.by_kind.items():
        order = np.argsort(ids, kind="stable")
        arrays[f"ids_{kind}"] = np.asarray(ids, dtype=np.int64)[order]
        arrays[f"values_{kind}"] = np.asarray(values, dtype=np.int64)[order]
    if initial.default is not None:
        arrays["default"] = np.array([initial.default], dtype=np.int64)
    # allow_pickle is numpy's default, named so that mypy does not match **arrays against it
    np.savez(path, allow_pickle=True, **arrays)


class InitialFormatError(ValueError):
    """An initial-values file that cannot be read; the message names the file."""


def load_initial(path: Path) -> InitialValues:
    try:
        with np.load(path, allow_pickle=False) as z:
            kinds = sorted(int(name[4:]) for name in z.files if name.startswith("ids_"))
            by_kind = {k: (z[f"ids_{k}"], z[f"values_{k}"]) for k in kinds}
            default = int(z["default"][0]) if "default" in z.files else None
    except (OSError, EOFError, KeyError, ValueError, IndexError, zipfile.BadZipFile,
            zlib.error) as exc:  # fmt: skip
        if isinstance(exc, OSError) and exc.strerror:
            raise InitialFormatError(f"{path}: cannot read it ({exc.strerror})") from None
        why = " ".join((str(exc) or type(exc).__name__).split())
        raise InitialFormatError(
            f"{path}: not a readable initial-values file ({why}); it is damaged or cut short"
        ) from None
    for kind, (ids, values) in by_kind.items():
        if ids.ndim != 1 or ids.shape != values.shape or ids.dtype.kind not in "iu":
            raise InitialFormatError(
                f"{path}: ids_{kind} and values_{kind} must be integer arrays of one length"
            )
    return InitialValues(by_kind, default)
