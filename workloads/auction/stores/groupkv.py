"""Auction over entity groups on a key-value store (drivers/groups.py, Strudel 4.3-4.4.1):
one binding for HBase, MongoDB and Cassandra; each store's file names its driver.

Groups of one table, and their entries (numbers in decimal ASCII):

    s<seller>          name; next (the seller's next item_no); a<no>, p<no>: its auction
                       and sale items (the in-group index of items by seller)
    a<seller>:<no>     an auction item: title, price, max_bid, max_bidder, bid_count, next
                       (its next bid_no), b<bid_no> = "<bidder>:<amount>" (its bids)
    p<seller>:<no>     a sale item: title, price, quantity, next (its next purchase_no),
                       u<purchase_no> = "<buyer>:<quantity>" (its purchases)
    B<bidder>          bids by bidder (out-of-group index): "<seller>:<no>:<bid_no>"
    P<buyer>           purchases by buyer (out-of-group index): "<seller>:<no>:<purchase_no>"

A write is a transaction on one group, optimistic: read it, compute, commit with a
compare-and-set on its version; a moved version raises sdk.Abort("conflict"). Keys come
from a counter entry of the group they are unique in, taken by the same commit. An
out-of-group index entry is written before the entity's commit (Strudel 4.4.1: the
counter as read, then the index, then the entity), so a reader never misses a
committed bid or purchase but may meet a pointer whose commit lost: it reads the entity
and skips a pointer to nothing, or to a bid or purchase of someone else (the key went to
another transaction). Selling commits the seller's group (counter and in-group index)
and then creates the item's group; readers skip an index entry whose item is not there
yet. Operations are written once as generators of Read/Commit requests, played by a
blocking or an asynchronous connection (drivers/groups.py: play, play_async).
"""

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from bgbench import sdk
from bgbench.drivers.groups import (
    AsyncGroupKV,
    Commit,
    GroupKV,
    GroupTableBinding,
    Op,
    Read,
    admin_of,
    play,
    play_async,
)
from bgbench.errors import StoreError
from bgbench.workloads.auction.store import (
    AuctionItem,
    Bid,
    BidAnswer,
    FragmentData,
    ItemWithBids,
    Purchase,
    PurchaseAnswer,
    SaleItem,
    User,
)
from bgbench.workloads.auction.stores.groupkv_entries import (
    NEXT,
    auction_entries,
    auction_item,
    auction_key,
    bids,
    enc,
    number,
    numbers,
    pointers,
    sale_entries,
    sale_item,
    sale_key,
    seller_key,
)

if TYPE_CHECKING:
    pass

TABLE = "auction_groups"
INDEX_TRIES = 50  # an index insert's retries against other inserts into the same index
BATCH = 500


Pointers = dict[int, dict[str, bytes]]  # user -> index entries
Group = tuple[str, dict[str, bytes]]


# -- the operations, as generators of Read / Commit requests -------------------------------
def read_one(group: str) -> Op:
    (data,) = yield Read((group,))
    return data


def existing(group: str, what: str) -> Op:
    data = yield from read_one(group)
    if not data.version:
        raise StoreError(f"no {what} {group[1:]}")
    return data


def index_insert(index: str, entry: str) -> Op:
    """Add `entry` to an out-of-group index group: a blind insert, retried against other
    inserts into the same index (they commute); Abort once they keep winning."""
    for _ in range(INDEX_TRIES):
        data = yield from read_one(index)
        if entry in data.entries or (yield Commit(index, data.version, {entry: b""})):
            return None
    raise sdk.Abort("conflict", f"index {index} kept changing")


def sell(seller: int, prefix: str, key: str, entries: dict[str, bytes]) -> Op:
    s = yield from read_one(seller_key(seller))
    item_no = number(s.entries, NEXT, 0)
    taken = {NEXT: enc(item_no + 1), f"{prefix}{item_no}": b""}
    if not (yield Commit(seller_key(seller), s.version, taken)):
        raise sdk.Abort("conflict", f"seller {seller}'s group changed since it was read")
    group = key.format(seller=seller, item_no=item_no)
    old = yield from read_one(group)  # a leftover of an earlier database is overwritten
    stale = tuple(k for k in old.entries if k not in entries)
    if not (yield Commit(group, old.version, entries, stale)):  # the key is this one's alone
        raise StoreError(f"item {group} changed while being created (seller's group committed)")
    return item_no


def store_bid(seller: int, item_no: int, bidder: int, amount: int) -> Op:
    group = auction_key(seller, item_no)
    it = yield from existing(group, "auction item")
    e = it.entries
    max_bid, count, bid_no = number(e, "max_bid"), number(e, "bid_count"), number(e, NEXT)
    if amount <= max_bid:
        return BidAnswer(max_bid, count, -1)
    yield from index_insert(f"B{bidder}", f"{seller}:{item_no}:{bid_no}")
    puts = {"max_bid": enc(amount), "max_bidder": enc(bidder), "bid_count": enc(count + 1),
            NEXT: enc(bid_no + 1), f"b{bid_no}": b"%d:%d" % (bidder, amount)}  # fmt: skip
    if not (yield Commit(group, it.version, puts)):
        raise sdk.Abort("conflict", f"item {seller}:{item_no} changed since it was read")
    return BidAnswer(max_bid, count, bid_no)


def buy(seller: int, item_no: int, buyer: int, quantity: int) -> Op:
    group = sale_key(seller, item_no)
    it = yield from existing(group, "sale item")
    left, no = number(it.entries, "quantity"), number(it.entries, NEXT)
    if left < quantity:
        return PurchaseAnswer(left, -1)
    yield from index_insert(f"P{buyer}", f"{seller}:{item_no}:{no}")
    puts = {"quantity": enc(left - quantity), NEXT: enc(no + 1),
            f"u{no}": b"%d:%d" % (buyer, quantity)}  # fmt: skip
    if not (yield Commit(group, it.version, puts)):
        raise sdk.Abort("conflict", f"sale item {seller}:{item_no} changed since it was read")
    return PurchaseAnswer(left, no)


def item_with_bids(seller: int, item_no: int) -> Op:
    e = (yield from existing(auction_key(seller, item_no), "auction item")).entries
    return ItemWithBids(auction_item(seller, item_no, e), bids(seller, item_no, e))


def one_sale_item(seller: int, item_no: int) -> Op:
    e = (yield from existing(sale_key(seller, item_no), "sale item")).entries
    return sale_item(seller, item_no, e)


def by_seller(seller: int, prefix: str) -> Op:
    s = yield from read_one(seller_key(seller))
    numbers_ = pointers(s.entries, prefix)
    key = auction_key if prefix == "a" else sale_key
    found = yield Read(tuple(key(seller, n) for n in numbers_))
    make = auction_item if prefix == "a" else sale_item
    # an entry whose item is not created yet (a sale in flight) is skipped
    return [make(seller, n, d.entries) for n, d in zip(numbers_, found, strict=True) if d.version]


def followed(index: str, who: int, item_key: Callable[[int, int], str], prefix: str) -> Op:
    """The entries an out-of-group index points at that exist and are `who`'s: (seller,
    item_no, number, amount or quantity, the item group's entries). A pointer whose
    transaction lost its commit (Strudel 4.4.1) points at nothing or at another's."""
    data = yield from read_one(index)
    refs = sorted(numbers(k, 3, "index entry") for k in data.entries)
    items = sorted({(s, n) for s, n, _ in refs})
    found = yield Read(tuple(item_key(s, n) for s, n in items))
    groups = dict(zip(items, found, strict=True))
    answer = []
    for seller, item_no, no in refs:
        e = groups[(seller, item_no)].entries
        raw = e.get(f"{prefix}{no}")
        if raw is not None:
            owner, size = numbers(raw, 2, "index target")
            if owner == who:
                answer.append((seller, item_no, no, size, e))
    return answer


def by_bidder(bidder: int, winning: bool) -> Op:
    answer = []
    for seller, item_no, bid_no, amount, e in (
        yield from followed(f"B{bidder}", bidder, auction_key, "b")
    ):
        item = auction_item(seller, item_no, e)
        if not winning or (item.max_bidder == bidder and item.max_bid == amount):
            answer.append((Bid(seller, item_no, bid_no, bidder, amount), item))
    return answer


def by_buyer(buyer: int) -> Op:
    return [
        (Purchase(seller, item_no, no, buyer, quantity), sale_item(seller, item_no, e))
        for seller, item_no, no, quantity, e in (
            yield from followed(f"P{buyer}", buyer, sale_key, "u")
        )
    ]


def user_groups(users: Iterable[User], sellers: Pointers, bidders: Pointers) -> Iterable[Group]:
    for user in users:
        items = sellers.get(user.id, {})
        next_no = max((int(k[1:]) for k in items), default=-1) + 1
        yield seller_key(user.id), {"name": user.name.encode(), NEXT: enc(next_no), **items}
        yield f"B{user.id}", bidders.get(user.id, {})
        yield f"P{user.id}", {}


class Operations:
    """The Auction interactions as operations; `run` plays one on the connection."""

    run: Callable[[Op], Any]

    def sell_auction_item(self, seller: int, title: str, initial_price: int) -> Any:
        item = ItemWithBids(AuctionItem(seller, 0, title, initial_price, 0, -1, 0), [])
        return self.run(sell(seller, "a", "a{seller}:{item_no}", auction_entries(item)))

    def sell_sale_item(self, seller: int, title: str, price: int, quantity: int) -> Any:
        entries = sale_entries(SaleItem(seller, 0, title, price, quantity))
        return self.run(sell(seller, "p", "p{seller}:{item_no}", entries))

    def store_bid(self, seller: int, item_no: int, bidder: int, amount: int) -> Any:
        return self.run(store_bid(seller, item_no, bidder, amount))

    def buy_sale_item(self, seller: int, item_no: int, buyer: int, quantity: int) -> Any:
        return self.run(buy(seller, item_no, buyer, quantity))

    def auction_item(self, seller: int, item_no: int) -> Any:
        return self.run(item_with_bids(seller, item_no))

    def sale_item(self, seller: int, item_no: int) -> Any:
        return self.run(one_sale_item(seller, item_no))

    def auction_items_by_seller(self, seller: int) -> Any:
        return self.run(by_seller(seller, "a"))

    def sale_items_by_seller(self, seller: int) -> Any:
        return self.run(by_seller(seller, "p"))

    def bids_by_bidder(self, bidder: int) -> Any:
        return self.run(by_bidder(bidder, winning=False))

    def winning_bids_by_bidder(self, bidder: int) -> Any:
        return self.run(by_bidder(bidder, winning=True))

    def purchases_by_buyer(self, buyer: int) -> Any:
        return self.run(by_buyer(buyer))


class AuctionKVConnection(Operations):
    """One socialite thread's handle (a blocking store: HBase): each call returns its
    answer."""

    def __init__(self, kv: GroupKV) -> None:
        self.kv = kv
        self.run = lambda op: play(kv, op)

    def close(self) -> None:
        self.kv.close()


class AsyncAuctionKVConnection(Operations):
    """One socialite task's handle (MongoDB, Cassandra): each call returns a coroutine."""

    def __init__(self, kv: AsyncGroupKV) -> None:
        self.kv = kv
        self.run = lambda op: play_async(kv, op)

    async def close(self) -> None:
        await self.kv.close()


class AuctionGroupKVBinding(GroupTableBinding):
    """The binding; a store's file subclasses it with its name, options and
    `make_groups` (drivers/groups.py: GroupTableBinding)."""

    def load_fragment(self, fragment: FragmentData, progress: Callable[[], None]) -> None:
        """The fragment's items afresh (those its sellers' groups list are deleted first),
        then its sellers' groups and its users' index groups (the generator's bidders
        are users of the seller's fragment; no purchases are loaded)."""
        users = fragment.user_ids()
        with admin_of(self.groups) as admin:
            old = admin.read_many([seller_key(u) for u in users])
            stale = [
                key(u, n) for u in users for prefix, key in (("a", auction_key), ("p", sale_key))
                for n in pointers(old[seller_key(u)].entries, prefix)
            ]  # fmt: skip
            for at in range(0, len(stale), BATCH):
                admin.delete(stale[at : at + BATCH])
                progress()
            sellers: Pointers = {u: {} for u in users}
            bidders: Pointers = {u: {} for u in users}
            for batch in fragment.auction_item_batches():
                admin.replace((auction_key(w.item.seller, w.item.item_no), auction_entries(w))
                              for w in batch)  # fmt: skip
                for w in batch:
                    sellers[w.item.seller][f"a{w.item.item_no}"] = b""
                    for b in w.bids:
                        bidders.setdefault(b.bidder, {})[f"{b.seller}:{b.item_no}:{b.bid_no}"] = b""
                progress()
            for sales in fragment.sale_item_batches():
                admin.replace((sale_key(s.seller, s.item_no), sale_entries(s)) for s in sales)
                for s in sales:
                    sellers[s.seller][f"p{s.item_no}"] = b""
                progress()
            for user_batch in fragment.user_batches():
                admin.replace(user_groups(user_batch, sellers, bidders))
                progress()

    def read_back(self, fragment: FragmentData, progress: Callable[[], None]) -> list[ItemWithBids]:
        users = fragment.user_ids()
        found: list[ItemWithBids] = []
        with admin_of(self.groups) as admin:
            for at in range(0, len(users), BATCH):
                chunk = users[at : at + BATCH]
                sellers = admin.read_many([seller_key(u) for u in chunk])
                refs = [
                    (u, n) for u in chunk for n in pointers(sellers[seller_key(u)].entries, "a")
                ]
                items = admin.read_many([auction_key(u, n) for u, n in refs])
                for u, n in refs:
                    e = items[auction_key(u, n)].entries
                    if e:
                        found.append(ItemWithBids(auction_item(u, n, e), bids(u, n, e)))
                progress()
        return found

    def connect(self) -> AuctionKVConnection:
        if self.concurrency != "threads":
            raise NotImplementedError(f"the {self.name} binding runs socialites as tasks")
        return AuctionKVConnection(self.groups.connect())

    async def connect_async(self) -> AsyncAuctionKVConnection:
        if self.concurrency != "asyncio":
            raise NotImplementedError(f"the {self.name} binding runs socialites as threads")
        return AsyncAuctionKVConnection(await self.groups.connect_async())
