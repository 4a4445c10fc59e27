"""Response negotiation (codec.negotiate): each Accept header is parsed once, and a refusal is never remembered
as an answer."""

import pytest

from dramock import errors
from dramock.apiserver import codec

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@pytest.mark.parametrize("header, expected", [
    (None, codec.Accept()),
    ("*/*", codec.Accept()),
    ("application/yaml", codec.Accept(yaml=True)),
    ("application/vnd.kubernetes.protobuf, */*", codec.Accept(protobuf=True)),
    ("application/vnd.kubernetes.protobuf,application/json", codec.Accept(protobuf=True, json_fallback=True)),
    (TABLE, codec.Accept(form="Table")),
])
def test_the_same_header_negotiates_the_same_form_every_time(header, expected):
    assert codec.negotiate(header) == expected
    assert codec.negotiate(header) == expected


def test_a_header_nothing_can_answer_is_refused_every_time():
    for _ in range(2):
        with pytest.raises(errors.APIError) as refused:
            codec.negotiate("text/html")
        assert refused.value.code == 406
