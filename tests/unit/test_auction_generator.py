"""The Auction database generator: deterministic, fragments that keep every bid and its
bidder with the seller, item numbers unique per seller, max bids that are the last bid."""

import numpy as np
import pytest
from pydantic import ValidationError

from bgbench.workloads.auction.config import AuctionConfig, AuctionDatabaseConfig
from bgbench.workloads.auction.generator import FragmentData
from bgbench.workloads.auction.workload import WORKLOAD

DB = AuctionDatabaseConfig(users=200, auction_items=3, sale_items=2, bids=4, seed=9)


def fragments(capacities: list[float]) -> list[FragmentData]:
    return [FragmentData(DB, 0.27, capacities, i) for i in range(len(capacities))]


def items(data: FragmentData) -> list:
    return [x for batch in data.auction_item_batches() for x in batch]


def test_fragments_split_the_users_and_sizes_agree_with_the_workload() -> None:
    parts = fragments([1.0, 2.0, 1.0])
    users = np.concatenate([p.users for p in parts])
    assert sorted(users.tolist()) == list(range(DB.users))
    config = AuctionConfig(database=DB)
    assert WORKLOAD.fragment_sizes(config, [1.0, 2.0, 1.0]) == [p.size for p in parts]


def test_the_same_seed_generates_the_same_database() -> None:
    a, b = fragments([1.0, 1.0]), fragments([1.0, 1.0])
    assert items(a[1]) == items(b[1])
    assert list(a[0].sale_item_batches()) == list(b[0].sale_item_batches())


def test_bids_stay_in_the_fragment_rise_and_end_at_the_max_bid() -> None:
    for data in fragments([1.0, 1.0]):
        members = set(data.user_ids())
        loaded = items(data)
        assert any(bids for _, bids in loaded)
        for item, bids in loaded:
            assert item.seller in members and item.bid_count == len(bids)
            assert all(b.bidder in members and b.bidder != item.seller for b in bids)
            amounts = [b.amount for b in bids]
            assert amounts == sorted(set(amounts))
            assert [b.bid_no for b in bids] == list(range(len(bids)))
            if bids:
                assert (item.max_bid, item.max_bidder) == (bids[-1].amount, bids[-1].bidder)
                assert bids[0].amount > item.initial_price
            else:
                assert (item.max_bid, item.max_bidder) == (0, -1)


def test_item_numbers_are_unique_per_seller_across_both_kinds() -> None:
    data = fragments([1.0])[0]
    numbers: dict[int, list[int]] = {}
    for item, _ in items(data):
        numbers.setdefault(item.seller, []).append(item.item_no)
    for sales in data.sale_item_batches():
        for sale in sales:
            numbers.setdefault(sale.seller, []).append(sale.item_no)
            assert 1 <= sale.quantity <= DB.quantity
    for nos in numbers.values():
        assert sorted(nos) == list(range(len(nos)))


def test_a_fragment_needs_two_users() -> None:
    config = AuctionConfig(database=AuctionDatabaseConfig(users=3))
    with pytest.raises(Exception, match="fewer than 2"):
        WORKLOAD.check_fragments(config, WORKLOAD.fragment_sizes(config, [1.0, 1.0]))


@pytest.mark.parametrize(
    ("workload", "field"),
    [
        ({"mix": "nonesuch"}, "unknown mix 'nonesuch'"),
        ({"sessions": {"STORE_BID": {"states": {"HOME": {}}}}}, "the name of an interaction"),
        ({"sessions": {"X": {"states": {"STORE_BID": {"on": {"lost": "nowhere"}}}}}}, "nowhere"),
        ({"retry": {"attempts": 0}}, "attempts"),
    ],
)
def test_bad_workload_settings_name_what_is_wrong(workload: dict, field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        AuctionConfig.model_validate({"workload": workload})
