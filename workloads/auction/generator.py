"""The Auction database, generated as pure functions of the seed, the user and the fragment.

- Users 0..N-1 (0 the most popular), split among load processes D-Zipfian (each
  fragment's share of the requests tracks its capacity: bgbench.workloads.zipf), as EHR's
  patients are. A fragment holds its users, the items they sell, the bids and purchases
  on those items: every bidder of a loaded bid is a user of the seller's fragment, and
  the workload only bids and buys within the fragment, so every tracked item belongs to
  one fragment (Strudel's groups never span two load processes).
- User u sells `auction_items` auction items on average (0 to twice that) with item_no
  0, 1, ..., then its sale items (`sale_items` on average) numbered on from there: one
  item_no counter per seller, as the store's generated keys continue it.
- An auction item has an initial price of 1.00 to 100.00 and `bids` bids on average, by
  users of the fragment other than the seller, each 0.01 to 5.00 above the one before;
  its max bid is the last one (0 and bidder -1 without bids).
- A sale item has a price and 1 to `quantity` units; no purchases are loaded.
"""

from collections.abc import Iterator, Sequence

import numpy as np

from bgbench.workloads.auction.config import AuctionDatabaseConfig
from bgbench.workloads.auction.store import AuctionItem, Bid, ItemWithBids, SaleItem, User
from bgbench.workloads.zipf import LocalZipf, assign_fragments

BATCH = 200  # users per batch handed to a binding: one liveness beat each
ITEM_SPACE = 1 << 24  # item_no bound per seller: the tracked ids are seller * ITEM_SPACE + no

_M64 = (1 << 64) - 1
_GOLD = 0x9E3779B97F4A7C15

# Streams of the hash, one per generated field.
_AUCTION_COUNT, _SALE_COUNT, _PRICE, _BID_COUNT, _BIDDER, _STEP = range(6)
_QUANTITY, _ADJECTIVE, _NOUN = 6, 7, 8

ADJECTIVES = ("Antique", "Vintage", "Rare", "Signed", "Mint", "Handmade", "Classic", "Boxed",
              "Restored", "Limited")  # fmt: skip
NOUNS = ("clock", "camera", "guitar", "lamp", "watch", "poster", "vase", "bicycle", "radio",
         "chair", "print", "atlas")  # fmt: skip


def _mix(x: int) -> int:
    """SplitMix64's finaliser."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def hashed(seed: int, stream: int, *keys: int) -> int:
    """64 well-mixed bits, a pure function of (seed, stream, keys...)."""
    h = _mix((seed * _GOLD + stream) & _M64)
    for k in keys:
        h = _mix(h ^ ((k * _GOLD) & _M64))
    return h


def item_key(seller: int, item_no: int) -> int:
    """The tracked id of an item: unique across the database."""
    return seller * ITEM_SPACE + item_no


def title(seed: int, seller: int, item_no: int) -> str:
    adjective = ADJECTIVES[hashed(seed, _ADJECTIVE, seller, item_no) % len(ADJECTIVES)]
    return f"{adjective} {NOUNS[hashed(seed, _NOUN, seller, item_no) % len(NOUNS)]}"


def fragment_owner(
    db: AuctionDatabaseConfig, theta: float, capacities: Sequence[float]
) -> np.ndarray:
    """The fragment of every user."""
    return assign_fragments(db.users, theta, capacities)


class FragmentData:
    """One fragment's users and the items, bids and sale items generated for them
    (store.FragmentData)."""

    def __init__(
        self, db: AuctionDatabaseConfig, theta: float, capacities: Sequence[float], index: int
    ) -> None:
        if not 0 <= index < len(capacities):
            raise ValueError(f"fragment {index} outside 0..{len(capacities) - 1}")
        self.db = db
        self.theta = theta
        self.index = index
        self.users = np.flatnonzero(fragment_owner(db, theta, capacities) == index).astype(np.int64)
        self._members: list[int] = self.users.tolist()

    @property
    def size(self) -> int:
        return len(self.users)

    def local_zipf(self) -> LocalZipf:
        return LocalZipf(self.users, self.theta, self.db.users)

    def user_ids(self) -> list[int]:
        return list(self._members)

    def counts(self, seller: int) -> tuple[int, int]:
        """How many auction and sale items `seller` sells when loaded."""
        db, s = self.db, self.db.seed
        auction = hashed(s, _AUCTION_COUNT, seller) % (2 * db.auction_items + 1)
        return auction, hashed(s, _SALE_COUNT, seller) % (2 * db.sale_items + 1)

    def auction_item(self, seller: int, item_no: int) -> ItemWithBids:
        s, members = self.db.seed, self._members
        price = 100 + hashed(s, _PRICE, seller, item_no) % 9_901
        n = hashed(s, _BID_COUNT, seller, item_no) % (2 * self.db.bids + 1)
        bids: list[Bid] = []
        amount, bidder = 0, -1
        if len(members) > 1:
            amount = price
            for j in range(n):
                pick = hashed(s, _BIDDER, seller, item_no, j) % len(members)
                bidder = members[pick]
                if bidder == seller:
                    bidder = members[(pick + 1) % len(members)]
                amount += 1 + hashed(s, _STEP, seller, item_no, j) % 500
                bids.append(Bid(seller, item_no, j, bidder, amount))
        if not bids:
            amount, bidder = 0, -1
        item = AuctionItem(
            seller, item_no, title(s, seller, item_no), price, amount, bidder, len(bids)
        )
        return ItemWithBids(item, bids)

    def sale_item(self, seller: int, item_no: int) -> SaleItem:
        s = self.db.seed
        price = 100 + hashed(s, _PRICE, seller, item_no) % 9_901
        quantity = 1 + hashed(s, _QUANTITY, seller, item_no) % self.db.quantity
        return SaleItem(seller, item_no, title(s, seller, item_no), price, quantity)

    def _batches(self) -> Iterator[list[int]]:
        for lo in range(0, len(self._members), BATCH):
            yield self._members[lo : lo + BATCH]

    def user_batches(self) -> Iterator[list[User]]:
        for batch in self._batches():
            yield [User(u, f"user{u}") for u in batch]

    def auction_item_batches(self) -> Iterator[list[ItemWithBids]]:
        for batch in self._batches():
            rows = [self.auction_item(u, i) for u in batch for i in range(self.counts(u)[0])]
            if rows:
                yield rows

    def sale_item_batches(self) -> Iterator[list[SaleItem]]:
        for batch in self._batches():
            rows: list[SaleItem] = []
            for u in batch:
                auction, sale = self.counts(u)
                rows.extend(self.sale_item(u, auction + k) for k in range(sale))
            if rows:
                yield rows
