"""Initial values of tracked items: what each item held before the experiment began."""

import io
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bgbench.errors import UserError
from bgbench.inputs import open_regular
from bgbench.validation.logformat import write_error
from bgbench.validation.records import VALUE_LIMIT


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
    try:
        # allow_pickle is numpy's default, named so that mypy does not match **arrays against it
        np.savez(path, allow_pickle=True, **arrays)
    except OSError as error:  # a full disk: the infrastructure's fault, named
        raise write_error(path, error) from None


class InitialFormatError(ValueError):
    """An initial-values file that cannot be read; the message names the file."""


MEMBER = re.compile(r"(ids|values)_(\d{1,3})\.npy|default\.npy")
MAX_MEMBERS = 2 * 256 + 1  # ids and values per item kind (a byte), and a default
DEFAULT_BUDGET = 2 << 30
MIN_INITIAL_LIMIT = 64 << 20  # initial values are held in memory whatever the budget


def load_initial(path: Path, budget_bytes: int = DEFAULT_BUDGET) -> InitialValues:
    """The initial values beside a log, checked before use: only the members save_initial
    writes, their sizes (from the zip's directory, before anything is decompressed) within
    `budget_bytes`, int64 arrays with sorted unique ids and values within VALUE_LIMIT."""
    try:
        with open_regular(path, "initial values") as handle, zipfile.ZipFile(handle) as z:
            arrays = {m: _member(z, m, path) for m in _members(z, path, budget_bytes)}
    except UserError as exc:
        raise InitialFormatError(str(exc)) from None
    except InitialFormatError:
        raise
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as exc:
        if isinstance(exc, OSError) and exc.strerror:
            raise InitialFormatError(f"{path}: cannot read it ({exc.strerror})") from None
        why = " ".join((str(exc) or type(exc).__name__).split())
        raise InitialFormatError(
            f"{path}: not a readable initial-values file ({why}); it is damaged or cut short"
        ) from None
    by_kind: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for name, ids in arrays.items():
        if name.startswith("ids_"):
            kind = int(name[4:])
            values = arrays.get(f"values_{kind}")
            if values is None or len(values) != len(ids):
                raise InitialFormatError(
                    f"{path}: ids_{kind} and values_{kind} must be arrays of one length"
                )
            _check_kind(path, kind, ids, values)
            by_kind[kind] = (ids, values)
    if any(f"ids_{name[7:]}" not in arrays for name in arrays if name.startswith("values_")):
        raise InitialFormatError(f"{path}: values without their ids")
    default = None
    if "default" in arrays:
        if len(arrays["default"]) != 1 or abs(int(arrays["default"][0])) > VALUE_LIMIT:
            raise InitialFormatError(f"{path}: default must be one value within +-2^53")
        default = int(arrays["default"][0])
    return InitialValues(by_kind, default)


def _members(z: zipfile.ZipFile, path: Path, budget_bytes: int) -> list[str]:
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise InitialFormatError(f"{path}: {len(infos)} members, at most {MAX_MEMBERS}")
    for info in infos:
        if not MEMBER.fullmatch(info.filename):
            raise InitialFormatError(f"{path}: unexpected member {info.filename!r}")
    unpacked = sum(info.file_size for info in infos)
    limit = max(budget_bytes // 2, MIN_INITIAL_LIMIT)
    if unpacked > limit:
        raise InitialFormatError(
            f"{path}: its members unpack to {unpacked:,} bytes, more than the {limit:,} "
            "the memory budget leaves for initial values (half of it): refused unread"
        )
    names = [info.filename[: -len(".npy")] for info in infos]
    if len(set(names)) != len(names):
        raise InitialFormatError(f"{path}: a member is repeated")
    return names


def _member(z: zipfile.ZipFile, name: str, path: Path) -> np.ndarray:
    """One .npy member as a 1-d int64 array; its header must agree with its size (numpy
    would allocate whatever shape the header claims)."""
    info = z.getinfo(f"{name}.npy")
    with z.open(info) as f:
        data = f.read(info.file_size + 1)  # zipfile stops at the declared size
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
    body = data[stream.tell() :]
    if dtype.kind not in "iu" or dtype.itemsize != 8 or len(shape) != 1 or fortran:
        raise InitialFormatError(f"{path}: {name} is {dtype} {shape}, not a list of int64")
    if shape[0] * 8 != len(body):
        raise InitialFormatError(
            f"{path}: {name} says {shape[0]} values but holds {len(body)} bytes"
        )
    array: np.ndarray = np.frombuffer(body, dtype=dtype).astype(np.int64)
    if dtype.kind == "u" and len(array) and int(np.frombuffer(body, dtype=dtype).max()) >= 1 << 63:
        raise InitialFormatError(f"{path}: {name} holds a value beyond int64")
    return array


def _check_kind(path: Path, kind: int, ids: np.ndarray, values: np.ndarray) -> None:
    """Ids sorted and unique (the lookup's binary search needs it), values plausible."""
    if kind > 255:
        raise InitialFormatError(f"{path}: item kind {kind} is beyond 255")
    unsorted = np.flatnonzero(ids[1:] <= ids[:-1])
    if len(unsorted):
        i = int(unsorted[0]) + 1
        what = "repeated" if ids[i] == ids[i - 1] else "out of order"
        raise InitialFormatError(
            f"{path}: ids_{kind}[{i}] = {int(ids[i])} is {what} (ids must be sorted and unique)"
        )
    wild = np.flatnonzero((values > VALUE_LIMIT) | (values < -VALUE_LIMIT))
    if len(wild):
        i = int(wild[0])
        raise InitialFormatError(
            f"{path}: values_{kind}[{i}] = {int(values[i])} is beyond +-2^53, not a count"
        )
