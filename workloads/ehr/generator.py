"""The EHR database (paper section 3.2), generated as pure functions of the seed and ids.

Every field of patient p, and of its j-th lab result, is a hash of (seed, p, j): the
database is the same however it is cut into fragments, a fragment generates only its
own patients, and the initial value of every tracked item (each patient's result count)
follows without asking a store.

- Patients 0..N-1 (0 is the most popular): names, address, telephone and birth date
  drawn from small tables.
- Result counts: beta-binomial per patient (a share drawn from a Beta distribution, then
  Binomial(maxresults, share)), so 0 to 20 with a mean of 7 by default, as the paper's
  data set, and spread over the whole range (sd about 4.7) rather than bunched at 7.
- Lab results: patient p's j-th loaded result has sequence number p * maxresults + j; the
  k-th result a fragment inserts in a run has base + k * F + f (base = N * maxresults,
  F fragments, f this fragment): every fragment's keys increase and no two fragments ever
  share one. The key is the sequence number, or with hashed keys a bijection of it onto
  [0, 2^63) (so hashed keys cannot collide either). Test type, value and unit come from a
  table of LOINC codes; loaded results are dated 2015-2024, inserted ones now.
- Fragments: D-Zipfian (each fragment's share of the requests tracks its capacity share,
  bgbench.workloads.zipf) or contiguous id ranges sized by capacity.
"""

import itertools
import math
from collections.abc import Iterator, Sequence
from functools import cache

import numpy as np

from bgbench.workloads.ehr.config import EHRDatabaseConfig
from bgbench.workloads.ehr.store import LabResult, Patient
from bgbench.workloads.zipf import LocalZipf, assign_fragments, capacity_shares

BATCH = 1000  # rows per batch handed to a binding: one liveness beat each

_M64 = (1 << 64) - 1
_M63 = (1 << 63) - 1
_GOLD = 0x9E3779B97F4A7C15
_U = np.uint64

# Streams of the hash, one per generated field.
_COUNT, _FAMILY, _GIVEN, _STREET, _CITY, _NUMBER, _PHONE, _BIRTH = range(8)
_TEST, _VALUE, _WHEN = 8, 9, 10

FAMILY = ("Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis",
          "Rodriguez", "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson",
          "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson",
          "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker",
          "Young")  # fmt: skip
GIVEN = ("James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda",
         "David", "Elizabeth", "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica",
         "Thomas", "Sarah", "Charles", "Karen", "Daniel", "Lisa", "Matthew", "Nancy",
         "Anthony", "Betty", "Mark", "Sandra", "Paul", "Ashley", "Steven", "Emily")  # fmt: skip
STREETS = ("Main St", "Oak Ave", "Pine Rd", "Maple Dr", "Cedar Ln", "Elm St", "Park Ave",
           "Lake Rd", "Hill St", "Forbes Ave")  # fmt: skip
CITIES = ("Pittsburgh, PA", "Boston, MA", "Denver, CO", "Austin, TX", "Portland, OR",
          "Madison, WI", "Raleigh, NC", "Tucson, AZ")  # fmt: skip
# (LOINC code, unit, low, high): common laboratory tests and their usual ranges.
TESTS = (
    ("2345-7", "mg/dL", 70.0, 140.0),  # glucose
    ("2160-0", "mg/dL", 0.5, 1.3),  # creatinine
    ("718-7", "g/dL", 12.0, 17.0),  # hemoglobin
    ("2951-2", "mmol/L", 135.0, 145.0),  # sodium
    ("2823-3", "mmol/L", 3.5, 5.1),  # potassium
    ("6690-2", "10*3/uL", 4.0, 11.0),  # leukocytes
    ("777-3", "10*3/uL", 150.0, 400.0),  # platelets
    ("2093-3", "mg/dL", 120.0, 240.0),  # cholesterol
    ("4548-4", "%", 4.0, 9.0),  # hemoglobin A1c
    ("1742-6", "U/L", 7.0, 56.0),  # alanine aminotransferase
)
BIRTH_FROM = np.datetime64("1925-01-01")
BIRTH_DAYS = 365 * 95
LOADED_FROM_MS = 1_420_070_400_000  # 2015-01-01 UTC
LOADED_SPAN_MS = 10 * 365 * 86_400_000  # to the end of 2024


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over uint64 (wrapping arithmetic)."""
    x = x ^ (x >> _U(30))
    x = x * _U(0xBF58476D1CE4E5B9)
    x = x ^ (x >> _U(27))
    x = x * _U(0x94D049BB133111EB)
    out: np.ndarray = x ^ (x >> _U(31))
    return out


def hashed(seed: int, stream: int, *keys: np.ndarray) -> np.ndarray:
    """64 well-mixed bits per element, a pure function of (seed, stream, keys...)."""
    start = _mix(np.array([(seed * _GOLD + stream) & _M64], dtype=np.uint64))
    h = np.broadcast_to(start, np.shape(keys[0])).copy()
    for k in keys:
        h = _mix(h ^ (np.asarray(k).astype(np.uint64) * _U(_GOLD)))
    return h


def _unit_interval(bits: np.ndarray) -> np.ndarray:
    return (bits >> _U(11)).astype(np.float64) * 2.0**-53


def _choose(bits: np.ndarray, n: int) -> np.ndarray:
    return (bits % _U(n)).astype(np.int64)


# -- keys ------------------------------------------------------------------------------------

_C1, _C2 = 0xBF58476D1CE4E5B9 & _M63, 0x94D049BB133111EB & _M63  # odd: bijective mod 2^63


def hash_key(seq: int) -> int:
    """A bijection of [0, 2^63) onto itself that scatters neighbours (xor-shifts and odd
    multiplications modulo 2^63 are each invertible)."""
    x = seq ^ (seq >> 31)
    x = (x * _C1) & _M63
    x ^= x >> 29
    x = (x * _C2) & _M63
    return x ^ (x >> 32)


def hash_keys(seq: np.ndarray) -> np.ndarray:
    """hash_key over an array (int64 in, int64 out)."""
    m = _U(_M63)
    x = seq.astype(np.uint64)
    x = x ^ (x >> _U(31))
    x = (x * _U(_C1)) & m
    x = x ^ (x >> _U(29))
    x = (x * _U(_C2)) & m
    return (x ^ (x >> _U(32))).astype(np.int64)


class KeyScheme:
    """The keys of lab results: sequence numbers, hashed or not."""

    def __init__(self, db: EHRDatabaseConfig, fragments: int, hashed_keys: bool) -> None:
        self.maxresults = db.maxresults
        self.base = db.patients * db.maxresults  # the first sequence number of an insert
        self.fragments = fragments
        self.hashed = hashed_keys

    def loaded(self, patients: np.ndarray, j: np.ndarray) -> np.ndarray:
        seq = patients.astype(np.int64) * self.maxresults + j
        return hash_keys(seq) if self.hashed else seq

    def inserted(self, fragment: int, k: int) -> int:
        """The key of the k-th result fragment `fragment` inserts (k = 0, 1, ...)."""
        seq = self.base + k * self.fragments + fragment
        return hash_key(seq) if self.hashed else seq


# -- the database ----------------------------------------------------------------------------


COUNT_CONCENTRATION = 4.0  # alpha + beta of the Beta share: lower spreads counts wider


@cache
def count_cdf(n: int, mean: float) -> np.ndarray:
    """P(count <= k), k = 0..n: beta-binomial with mean `mean`."""
    if mean <= 0:  # nobody has a result
        return np.ones(n + 1)
    if mean >= n:  # everybody has n
        return np.array([0.0] * n + [1.0])
    a = COUNT_CONCENTRATION * mean / n
    b = COUNT_CONCENTRATION - a

    def log_beta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    pmf = [math.comb(n, k) * math.exp(log_beta(k + a, n - k + b) - log_beta(a, b))
           for k in range(n + 1)]  # fmt: skip
    cdf = np.cumsum(pmf)
    cdf[-1] = 1.0
    return cdf


def result_counts(db: EHRDatabaseConfig, patients: np.ndarray) -> np.ndarray:
    """Lab results each patient has when loaded: 0..maxresults, mean meanresults."""
    u = _unit_interval(hashed(db.seed, _COUNT, patients))
    cdf = count_cdf(db.maxresults, db.meanresults)
    return np.searchsorted(cdf, u, side="right").astype(np.int64)


def patient_rows(db: EHRDatabaseConfig, patients: np.ndarray) -> list[Patient]:
    s = db.seed
    family = _choose(hashed(s, _FAMILY, patients), len(FAMILY)).tolist()
    given = _choose(hashed(s, _GIVEN, patients), len(GIVEN)).tolist()
    street = _choose(hashed(s, _STREET, patients), len(STREETS)).tolist()
    city = _choose(hashed(s, _CITY, patients), len(CITIES)).tolist()
    number = (1 + _choose(hashed(s, _NUMBER, patients), 9999)).tolist()
    phone = _choose(hashed(s, _PHONE, patients), 10_000_000).tolist()
    days = _choose(hashed(s, _BIRTH, patients), BIRTH_DAYS)
    birth = (BIRTH_FROM + days.astype("timedelta64[D]")).astype(str).tolist()
    fields = zip(patients.tolist(), family, given, street, city, number, phone, birth, strict=True)
    rows = []
    for p, f, g, st, c, n, ph, b in fields:
        address = f"{n} {STREETS[st]}, {CITIES[c]}"
        telephone = f"+1-{ph // 10_000:03d}-555-{ph % 10_000:04d}"
        rows.append(Patient(p, FAMILY[f], GIVEN[g], address, telephone, b))
    return rows


def result_rows(
    db: EHRDatabaseConfig, keys: KeyScheme, patients: np.ndarray, counts: np.ndarray
) -> list[LabResult]:
    """The loaded lab results of these patients (counts[i] for patients[i])."""
    total = int(counts.sum())
    owner = np.repeat(patients.astype(np.int64), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    j = np.arange(total, dtype=np.int64) - first
    s = db.seed
    test = _choose(hashed(s, _TEST, owner, j), len(TESTS)).tolist()
    u = _unit_interval(hashed(s, _VALUE, owner, j)).tolist()
    when = (LOADED_FROM_MS + _choose(hashed(s, _WHEN, owner, j), LOADED_SPAN_MS)).tolist()
    ids = keys.loaded(owner, j).tolist()
    rows = []
    for rid, p, t, x, w in zip(ids, owner.tolist(), test, u, when, strict=True):
        code, unit, low, high = TESTS[t]
        rows.append(LabResult(rid, p, code, round(low + x * (high - low), 2), unit, w))
    return rows


def new_result(key: int, patient: int, draw: float, now_ms: int) -> LabResult:
    """A lab result written by a run: test and value from `draw` in [0, 1)."""
    t = min(int(draw * len(TESTS)), len(TESTS) - 1)
    code, unit, low, high = TESTS[t]
    x = draw * len(TESTS) - t
    return LabResult(key, patient, code, round(low + x * (high - low), 2), unit, now_ms)


# -- fragments -------------------------------------------------------------------------------


def _contiguous(n: int, capacities: Sequence[float]) -> np.ndarray:
    shares = capacity_shares(capacities)
    bounds = np.round(np.cumsum(shares) * n).astype(np.int64)
    bounds[-1] = n
    owner = np.empty(n, dtype=np.int32)
    for k, (lo, hi) in enumerate(itertools.pairwise([0, *bounds.tolist()])):
        owner[lo:hi] = k
    return owner


def fragment_owner(db: EHRDatabaseConfig, theta: float, capacities: Sequence[float]) -> np.ndarray:
    """The fragment of every patient."""
    if db.fragments == "contiguous":
        return _contiguous(db.patients, capacities)
    return assign_fragments(db.patients, theta, capacities)


class FragmentData:
    """One fragment's patients and their generated rows (store.FragmentRows)."""

    def __init__(
        self,
        db: EHRDatabaseConfig,
        theta: float,
        capacities: Sequence[float],
        index: int,
        hashed_keys: bool,
    ) -> None:
        if not 0 <= index < len(capacities):
            raise ValueError(f"fragment {index} outside 0..{len(capacities) - 1}")
        self.db = db
        self.theta = theta
        self.index = index
        self.patients = np.flatnonzero(fragment_owner(db, theta, capacities) == index).astype(
            np.int64
        )
        self.keys = KeyScheme(db, len(capacities), hashed_keys)
        self.initial_counts = result_counts(db, self.patients)

    @property
    def size(self) -> int:
        return len(self.patients)

    def local_zipf(self) -> LocalZipf:
        return LocalZipf(self.patients, self.theta, self.db.patients)

    def patient_batches(self) -> Iterator[list[Patient]]:
        for lo in range(0, self.size, BATCH):
            yield patient_rows(self.db, self.patients[lo : lo + BATCH])

    def result_batches(self) -> Iterator[list[LabResult]]:
        # about BATCH results per batch: patients in groups of BATCH / mean
        step = max(1, int(BATCH / max(self.db.meanresults, 1.0)))
        for lo in range(0, self.size, step):
            hi = lo + step
            rows = result_rows(self.db, self.keys, self.patients[lo:hi], self.initial_counts[lo:hi])
            if rows:
                yield rows
