"""The workload's own picture of one fragment, and the tracked items the validator checks.

Tracked items (kind: id = what a read logs / what a committed write changes):

- BID_COUNT (item key): an auction item's stored bid_count; +1 per bid stored.
- BIDS_SEEN (item key): the bids an auction_item read returned with the item, in the same
  snapshot; +1 per bid stored. A bid stored without its item's bid_count (a torn
  transaction) makes the two disagree; a lost increment makes bid_count fall behind.
- MAX_BID (item key): the item's max bid, written absolutely (the bid's amount) by a bid
  that won; store_bid's own read of it is logged too.
- QUANTITY (sale item key): units left; -q per purchase, +q when a new item is sold.
- SELLER_AUCTION_ITEMS, SELLER_SALE_ITEMS (seller): the length of a by-seller listing.
- BIDDER_BIDS (bidder): the length of bids_by_bidder; BUYER_PURCHASES (buyer): of
  purchases_by_buyer.

Item keys are seller * ITEM_SPACE + item_no (generator.item_key): unique across the
database, so no two fragments share an id. Initial values are the generated data plus
every change committed since; an item sold during a run starts from the default 0.
"""

import threading

import numpy as np

from bgbench import sdk
from bgbench.workloads.auction.generator import FragmentData, item_key

BID_COUNT, BIDS_SEEN, MAX_BID, QUANTITY = 0, 1, 2, 3
SELLER_AUCTION_ITEMS, SELLER_SALE_ITEMS, BIDDER_BIDS, BUYER_PURCHASES = 4, 5, 6, 7

ITEM_TITLES = {
    BID_COUNT: "auction item bid count",
    BIDS_SEEN: "auction item bids seen with it",
    MAX_BID: "auction item max bid",
    QUANTITY: "sale item quantity left",
    SELLER_AUCTION_ITEMS: "seller's auction items",
    SELLER_SALE_ITEMS: "seller's sale items",
    BIDDER_BIDS: "bidder's bids",
    BUYER_PURCHASES: "buyer's purchases",
}


class Picture:
    """What the fragment holds, as the workload knows it: the items of every seller, each
    auction item's bid count and max bid, each sale item's quantity, every user's bids and
    purchases. Changed only by transactions that committed; safe across threads."""

    def __init__(self, data: FragmentData) -> None:
        self.users = data.users
        self.auction: dict[int, list[int]] = {}  # seller -> item_no of its auction items
        self.sale: dict[int, list[int]] = {}  # seller -> item_no of its sale items
        self.bid_count: dict[int, int] = {}  # item key -> bids
        self.max_bid: dict[int, int] = {}  # item key -> max bid (0: none)
        self.price: dict[int, int] = {}  # item key -> initial price (the first bid's floor)
        self.quantity: dict[int, int] = {}  # sale item key -> units left
        self.bids: dict[int, int] = dict.fromkeys(data.user_ids(), 0)  # bidder -> bids
        self.purchases: dict[int, int] = dict.fromkeys(data.user_ids(), 0)  # buyer -> purchases
        self._lock = threading.Lock()
        for batch in data.auction_item_batches():
            for item, bids in batch:
                key = item_key(item.seller, item.item_no)
                self.bid_count[key], self.max_bid[key] = item.bid_count, item.max_bid
                self._add_auction_item(item.seller, item.item_no, item.initial_price)
                for bid in bids:
                    self.bids[bid.bidder] += 1
        for sale_batch in data.sale_item_batches():
            for sale in sale_batch:
                self.sale.setdefault(sale.seller, []).append(sale.item_no)
                self.quantity[item_key(sale.seller, sale.item_no)] = sale.quantity

    def _add_auction_item(self, seller: int, item_no: int, price: int) -> None:
        key = item_key(seller, item_no)
        # A listing may show an item before its seller's transaction came back, and a bid
        # on it may be pictured first: changes add up in any order.
        self.bid_count.setdefault(key, 0)
        self.max_bid.setdefault(key, 0)
        self.price[key] = price
        self.auction.setdefault(seller, []).append(item_no)  # last: pickable once complete

    # -- committed changes -----------------------------------------------------------------
    def sold_auction_item(self, seller: int, item_no: int, price: int) -> None:
        with self._lock:
            self._add_auction_item(seller, item_no, price)

    def sold_sale_item(self, seller: int, item_no: int, quantity: int) -> None:
        with self._lock:
            key = item_key(seller, item_no)
            self.quantity[key] = self.quantity.get(key, 0) + quantity  # bought first, maybe
            self.sale.setdefault(seller, []).append(item_no)

    def bid_stored(self, key: int, bidder: int, amount: int) -> None:
        with self._lock:
            self.bid_count[key] = self.bid_count.get(key, 0) + 1
            self.max_bid[key] = max(self.max_bid.get(key, 0), amount)
            self.bids[bidder] += 1

    def bought(self, key: int, buyer: int, quantity: int) -> None:
        with self._lock:
            self.quantity[key] = self.quantity.get(key, 0) - quantity
            self.purchases[buyer] += 1

    # -- the validator's initial values ----------------------------------------------------
    def initial_values(self) -> sdk.InitialValues:
        with self._lock:
            users = self.users
            by_kind = {
                BID_COUNT: _arrays(self.bid_count),
                BIDS_SEEN: _arrays(self.bid_count),
                MAX_BID: _arrays(self.max_bid),
                QUANTITY: _arrays(self.quantity),
                SELLER_AUCTION_ITEMS: _per_user(
                    users, {s: len(n) for s, n in self.auction.items()}
                ),
                SELLER_SALE_ITEMS: _per_user(users, {s: len(n) for s, n in self.sale.items()}),
                BIDDER_BIDS: _per_user(users, self.bids),
                BUYER_PURCHASES: _per_user(users, self.purchases),
            }
        # Items sold during the run are in none of these: they start from nothing.
        return sdk.InitialValues(by_kind, default=0)


def _arrays(values: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
    vals = np.fromiter(values.values(), dtype=np.int64, count=len(values))
    order = np.argsort(ids, kind="stable")
    return ids[order], vals[order]


def _per_user(users: np.ndarray, values: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    return users, np.array([values.get(u, 0) for u in users.tolist()], dtype=np.int64)
