"""An approver's token (``$NAMI_APPROVER_TOKEN``) carried in an answer file to the run that asked, and to
nobody else.

The run knows each approver's token by its SHA-256 alone (``approvals.approvers``), so to tell who answered it
must see the token itself; but an answer file in a team's queue folder is readable by the folder's group
(0640) until the run took it, and a token read there could be presented again, on other approvals and on the
approvals page. So the token travels sealed for the one run that asked:

- each pending approval carries a Diffie-Hellman public value of its run (``answer_key``: RFC 3526's 2048-bit
  MODP group 14; the secret exponent stays in the run's memory, a new one per question);
- the answer carries the answerer's own public value (new for each answer), the token encrypted with a key
  both sides derive from the shared secret (HKDF-SHA256; the stream is HMAC-SHA256 in counter mode), and an
  HMAC-SHA256 tag over what the answer says (its id, digest, answer, reason and uid, as a signature covers
  them: signing.py) and the ciphertext.

What a reader of the file sees opens for nobody but that run, and a copy of it in another file (another
approval, another answer, another user) does not check. The pending file is the run's own (its owner is
checked, and the sticky folder keeps others from replacing it), so nobody can put a public value of theirs
in its place.

Why not simply an HMAC keyed by the token: the run could not check it (it has the token's hash only), and an
HMAC keyed by that hash could be made by anyone who reads the approvers' hashes (in a shared agent.yaml).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.approvals.signing import signed_text

GROUP = "modp2048"  # RFC 3526 group 14
_PRIME = int(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
    "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F"
    "83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B"
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA0510"
    "15728E5A8AACAA68FFFFFFFFFFFFFFFF", 16)
_GENERATOR = 2
_EXPONENT_BITS = 320  # well above twice the group's ~112-bit strength
_CONTEXT = b"nami-approval sealed token v1"


@dataclass(frozen=True)
class RunKey:
    """One question's key pair: ``public`` goes in the pending file, ``secret`` never leaves the run."""

    secret: int = field(repr=False)
    public: int

    @classmethod
    def new(cls) -> RunKey:
        secret = secrets.randbits(_EXPONENT_BITS) | 1 << (_EXPONENT_BITS - 1)
        return cls(secret, pow(_GENERATOR, secret, _PRIME))

    def to_json(self) -> dict[str, str]:
        return {"group": GROUP, "public": format(self.public, "x")}

    def open(self, sealed: Any, fields: Mapping[str, Any]) -> str | None:
        """The token ``sealed`` carries, when it was sealed for this key over these ``fields`` (what the answer
        says); None otherwise (for another run or approval, altered, copied into another answer, malformed)."""
        if not isinstance(sealed, Mapping):
            return None
        theirs = _public(sealed.get("public"))
        try:
            box = bytes.fromhex(str(sealed.get("box")))
            tag = bytes.fromhex(str(sealed.get("tag")))
        except ValueError:
            return None
        if theirs is None:
            return None
        encrypt, authenticate = _keys(pow(theirs, self.secret, _PRIME), self.public, theirs)
        if not hmac.compare_digest(tag, _tag(authenticate, fields, theirs, box)):
            return None
        try:
            return _xor(box, _stream(encrypt, len(box))).decode()
        except UnicodeDecodeError:
            return None


def seal(token: str, answer_key: Any, fields: Mapping[str, Any]) -> dict[str, str] | None:
    """``token`` sealed for the run whose pending file gave ``answer_key``, bound to ``fields`` (the answer's
    id, digest, answer, reason and uid); None when the pending file has no key this nami can use."""
    if not isinstance(answer_key, Mapping) or answer_key.get("group") != GROUP:
        return None
    theirs = _public(answer_key.get("public"))
    if theirs is None:
        return None
    mine = RunKey.new()
    encrypt, authenticate = _keys(pow(theirs, mine.secret, _PRIME), theirs, mine.public)
    plain = token.encode()
    box = _xor(plain, _stream(encrypt, len(plain)))
    return {"public": format(mine.public, "x"), "box": box.hex(),
            "tag": _tag(authenticate, fields, mine.public, box).hex()}


def _public(value: Any) -> int | None:
    """A public value read from a file: in the group's range and not one of its trivial elements."""
    try:
        number = int(str(value), 16)
    except ValueError:
        return None
    return number if 1 < number < _PRIME - 1 else None


def _keys(shared: int, run_public: int, answer_public: int) -> tuple[bytes, bytes]:
    """HKDF-SHA256 (RFC 5869) of the shared secret, bound to both public values: an encryption key and an
    authentication key."""
    size = (_PRIME.bit_length() + 7) // 8
    info = _CONTEXT + run_public.to_bytes(size, "big") + answer_public.to_bytes(size, "big")
    prk = hmac.new(b"\0" * 32, shared.to_bytes(size, "big"), hashlib.sha256).digest()
    first = hmac.new(prk, info + b"\x01", hashlib.sha256).digest()
    second = hmac.new(prk, first + info + b"\x02", hashlib.sha256).digest()
    return first, second


def _stream(key: bytes, length: int) -> bytes:
    blocks = (hmac.new(key, counter.to_bytes(8, "big"), hashlib.sha256).digest()
              for counter in range((length + 31) // 32))
    return b"".join(blocks)[:length]


def _xor(data: bytes, stream: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, stream, strict=True))


def _tag(key: bytes, fields: Mapping[str, Any], answer_public: int, box: bytes) -> bytes:
    return hmac.new(key, signed_text(fields) + b"\0" + format(answer_public, "x").encode() + b"\0" + box,
                    hashlib.sha256).digest()
