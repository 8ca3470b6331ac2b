"""The entries of Auction's groups on a key-value store (groupkv.py lays them out): group
keys, the entries of an item as loaded, and decoding what a store returns, bounded (a
store's bytes are untrusted: a malformed entry is a StoreError, never a crash)."""

from bgbench.errors import StoreError
from bgbench.workloads.auction.store import AuctionItem, Bid, ItemWithBids, SaleItem

NEXT = "next"  # the entry holding a group's next generated key
MAX_TEXT = 4096


def seller_key(seller: int) -> str:
    return f"s{seller}"


def auction_key(seller: int, item_no: int) -> str:
    return f"a{seller}:{item_no}"


def sale_key(seller: int, item_no: int) -> str:
    return f"p{seller}:{item_no}"


def number(entries: dict[str, bytes], key: str, default: int | None = None) -> int:
    raw = entries.get(key)
    if raw is None:
        if default is None:
            raise StoreError(f"an Auction group lacks its entry {key!r}")
        return default
    if len(raw) > 24:
        raise StoreError(f"Auction entry {key!r}: {len(raw)} bytes is no number")
    try:
        return int(raw)
    except ValueError:
        raise StoreError(f"Auction entry {key!r}: not a number") from None


def numbers(raw: bytes | str, n: int, what: str) -> list[int]:
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    parts = text.split(":")
    if len(text) > 80 or len(parts) != n:
        raise StoreError(f"Auction {what} {text[:40]!r}: not {n} numbers")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise StoreError(f"Auction {what} {text[:40]!r}: not numbers") from None


def text(entries: dict[str, bytes], key: str) -> str:
    raw = entries.get(key, b"")
    if len(raw) > MAX_TEXT:
        raise StoreError(f"Auction entry {key!r}: {len(raw)} bytes")
    return raw.decode(errors="replace")


def enc(n: int) -> bytes:
    return b"%d" % n


def auction_entries(w: ItemWithBids) -> dict[str, bytes]:
    i = w.item
    entries = {
        "title": i.title.encode(), "price": enc(i.initial_price), "max_bid": enc(i.max_bid),
        "max_bidder": enc(i.max_bidder), "bid_count": enc(i.bid_count),
        NEXT: enc(max((b.bid_no for b in w.bids), default=-1) + 1),
    }  # fmt: skip
    entries.update((f"b{b.bid_no}", b"%d:%d" % (b.bidder, b.amount)) for b in w.bids)
    return entries


def sale_entries(s: SaleItem) -> dict[str, bytes]:
    return {"title": s.title.encode(), "price": enc(s.price), "quantity": enc(s.quantity),
            NEXT: enc(0)}  # fmt: skip


def auction_item(seller: int, item_no: int, e: dict[str, bytes]) -> AuctionItem:
    return AuctionItem(
        seller, item_no, text(e, "title"), number(e, "price"), number(e, "max_bid"),
        number(e, "max_bidder"), number(e, "bid_count"),
    )  # fmt: skip


def bids(seller: int, item_no: int, e: dict[str, bytes]) -> list[Bid]:
    found = []
    for key, raw in e.items():
        if key.startswith("b") and key != "bid_count":
            (bid_no,) = numbers(key[1:], 1, "bid key")
            bidder, amount = numbers(raw, 2, "bid")
            found.append(Bid(seller, item_no, bid_no, bidder, amount))
    return sorted(found, key=lambda b: b.bid_no)


def sale_item(seller: int, item_no: int, e: dict[str, bytes]) -> SaleItem:
    return SaleItem(seller, item_no, text(e, "title"), number(e, "price"), number(e, "quantity"))


def pointers(entries: dict[str, bytes], prefix: str) -> list[int]:
    return sorted(
        int(k[1:]) for k in entries if k[:1] == prefix and 1 < len(k) <= 16 and k[1:].isdigit()
    )
