"""The Riak *emulator* itself: it must refuse what a real Riak refuses, or the Riak
binding's contract suite would pass for requests a real Riak rejects."""

import httpx


def test_the_emulator_refuses_what_riak_refuses(riak_emulator):
    with httpx.Client(base_url=riak_emulator) as http:
        key = "/types/default/buckets/emu/keys/k"
        assert http.get("/ping").text == "OK"
        assert http.get(key).status_code == 404
        assert (
            http.put(
                key,
                params={"w": "most"},
                content=b"1",
                headers={"content-type": "application/json"},
            ).status_code
            == 400
        )
        assert http.get(key, params={"rr": "1"}).status_code == 400  # unknown parameter
        assert http.put(key, content=b"1", headers={"content-type": ""}).status_code == 400
        assert (
            http.put(
                "/types/default/buckets/emu/props", json={"props": {"allow_mult": True}}
            ).status_code
            == 400
        )
        put = {
            "params": {"w": "quorum", "pw": "0"},
            "headers": {"content-type": "application/json"},
        }
        assert http.put(key, content=b"[1]", **put).status_code == 204
        first = http.get(key, params={"r": "1", "notfound_ok": "true"})
        assert first.json() == [1]
        assert http.put(key, content=b"[2]", **put).status_code == 204
        second = http.get(key)
        assert second.json() == [2]
        assert second.headers["x-riak-vclock"] != first.headers["x-riak-vclock"]
