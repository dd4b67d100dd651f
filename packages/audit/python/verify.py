#!/usr/bin/env python3
"""A second verifier of Gatehouse audit logs, written from docs/audit-format.md alone.

    python3 verify.py [--key PUBLIC.pem]... [--witness FILE]... [--allow-open-tail] [--each] FILE...

Prints one JSON object: {"intact": true, "records": N} or {"intact": false, "records": N,
"damage": {"kind", "file", "line", "seq"?, "message"}}; exits 0 when intact, 1 when damaged,
2 on a usage or read error. Standard library plus `cryptography` (Debian: python3-cryptography)
for Ed25519. The section numbers below are the specification's.
"""

import argparse
import base64
import hashlib
import json
import math
import re
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

TERMINAL = {"gatehouse/stop", "gatehouse/start_refused", "gatehouse/config_refused"}
WINDOW = 63

# --- §2 canonical JSON ------------------------------------------------------------------------

_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _string(text):
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            # Control characters, and lone surrogates (json.loads keeps them as such).
            out.append("\\u%04x" % code)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _number(value):
    if isinstance(value, bool):
        raise TypeError("bool is not a number")
    # Every JSON number is an IEEE 754 double, as in ECMAScript (see _loads).
    value = float(value)
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that round-trip, as ECMAScript does; only the notation
    # differs. value = 0.DIGITS × 10^n, then ECMAScript's rules for where the point goes.
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    every = whole + fraction
    n = len(whole) + int(exponent or 0)
    stripped = every.lstrip("0")
    n -= len(every) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def _utf16_key(name):
    return name.encode("utf-16-be", "surrogatepass")


def canonical(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if isinstance(value, dict):
        names = sorted(value.keys(), key=_utf16_key)
        return "{" + ",".join(_string(k) + ":" + canonical(value[k]) for k in names) + "}"
    raise TypeError("not a JSON value: %r" % (value,))


def _utf8(text):
    return text.encode("utf-8", "surrogatepass")


def sha256(text):
    return "sha256:" + hashlib.sha256(_utf8(text)).hexdigest()


# --- §3 the hash --------------------------------------------------------------------------------


def record_hash(record):
    audit = dict(record["audit"])
    audit.pop("hash", None)
    body = dict(record)
    body["audit"] = audit
    return sha256((record["audit"]["prev_hash"] or "") + "\n" + canonical(body))


# --- §1 lines -----------------------------------------------------------------------------------


def _get(record, path):
    value = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None, False
        value = value[part]
    return value, True


def _is_int(v):
    # Numbers are doubles (see _loads): an integer is a double with no fraction.
    return isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer() and 0 <= v < 2**53


MAX_DEPTH = 1000
# A line nested MAX_DEPTH deep takes the parser and canonical() a few frames a level.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20 * MAX_DEPTH))


def _reject_constant(name):
    raise ValueError("%s is not JSON" % name)


def _loads(text):
    """A line's JSON value, read as ECMAScript's JSON.parse reads it (§1, §2): every number an
    IEEE 754 double (so 12345678901234567890, 1e21 written as digits and 3.0 are the numbers they
    are in ECMAScript), NaN and Infinity refused, and nothing nested deeper than MAX_DEPTH levels
    (counted outside strings before parsing; a deeper line is not JSON a verifier reads)."""
    depth = 0
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ValueError("nested deeper than %d levels" % MAX_DEPTH)
        elif ch in "]}":
            depth -= 1
    return json.loads(text, parse_int=float, parse_float=float, parse_constant=_reject_constant)


REQUIRED = [
    ("@timestamp", lambda v: isinstance(v, str)),
    ("event.action", lambda v: isinstance(v, str)),
    ("event.outcome", lambda v: isinstance(v, str)),
    ("event.reason", lambda v: isinstance(v, str)),
    ("service.name", lambda v: isinstance(v, str)),
    ("audit.seq", _is_int),
    ("audit.hash", lambda v: isinstance(v, str)),
]
OPTIONAL = [
    ("audit.stream", lambda v: isinstance(v, str)),
    ("audit.checkpoint", lambda v: isinstance(v, dict)),
]


def _well_formed(record):
    for path, ok in REQUIRED:
        value, present = _get(record, path)
        if not present or not ok(value):
            return False
    prev, present = _get(record, "audit.prev_hash")
    if not present or not (prev is None or isinstance(prev, str)):
        return False
    for path, ok in OPTIONAL:
        value, present = _get(record, path)
        if present and not ok(value):
            return False
    return True


def read_lines(paths):
    """Yields (file, line number, kind, record): kind is record, foreign, garbage, torn or malformed."""
    for index, path in enumerate(paths):
        with open(path, "rb") as handle:
            data = handle.read().decode("utf-8", "surrogateescape")
        lines = data.split("\n")
        unterminated = not data.endswith("\n")
        if not unterminated:
            lines = lines[:-1]
        for number, text in enumerate(lines, start=1):
            if text.strip() == "":
                continue
            try:
                value = _loads(text)
            except (ValueError, RecursionError):
                last = index == len(paths) - 1 and number == len(lines) and unterminated
                yield path, number, "torn" if last else "garbage", None
                continue
            schema, present = _get(value, "audit.schema_version") if isinstance(value, dict) else (None, False)
            if not present or not isinstance(schema, str):
                yield path, number, "foreign", None
            elif not _well_formed(value):
                yield path, number, "malformed", value
            else:
                yield path, number, "record", value


# --- §4 signatures ------------------------------------------------------------------------------


def key_id(public_key):
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "ed25519:" + hashlib.sha256(base64.b64encode(der)).hexdigest()[:16]


def load_keys(paths):
    keys = {}
    for path in paths:
        with open(path, "rb") as handle:
            key = serialization.load_pem_public_key(handle.read())
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("%s: not an Ed25519 public key" % path)
        keys[key_id(key)] = key
    return keys


def signature_ok(key, record, checkpoint):
    payload = canonical(
        {
            "hash": checkpoint["covers"]["hash"],
            "seq": checkpoint["covers"]["seq"],
            "stream": record["audit"].get("stream"),
            "time": checkpoint.get("time"),
        }
    )
    try:
        key.verify(base64.b64decode(checkpoint.get("signature") or ""), _utf8(payload))
        return True
    except (InvalidSignature, ValueError):
        return False


# --- §5 verification ----------------------------------------------------------------------------


class Damage(Exception):
    def __init__(self, kind, file, line, seq, message):
        super().__init__(message)
        self.kind, self.file, self.line, self.seq, self.message = kind, file, line, seq, message

    def as_json(self):
        out = {"kind": self.kind, "file": self.file, "line": self.line, "message": self.message}
        if self.seq is not None:
            out["seq"] = int(self.seq)
        return out


def _is_record(value):
    return isinstance(value, dict) and isinstance(value.get("audit"), dict)


def _declares(record, prev):
    """Whether a record declares damage right after prev (§5): its audit.resumed has
    damaged_tail and names prev, the last record its writer wrote whole."""
    resumed = record["audit"].get("resumed")
    return (
        isinstance(resumed, dict)
        and resumed.get("damaged_tail") is True
        and prev is not None
        and resumed.get("seq") == prev[2]["audit"]["seq"]
        and resumed.get("hash") == prev[2]["audit"]["hash"]
    )


def _break(item, prev, window, seen):
    path, number, record = item
    seq = record["audit"]["seq"]
    expected = prev[2]["audit"]["seq"] + 1
    if record["audit"]["hash"] in seen:
        return "inserted", "this record appears twice"
    if seq == prev[2]["audit"]["seq"]:
        return "inserted", "another record claims the same seq"
    ahead = [r for (_, _, kind, r) in window if kind == "record"]
    successor_ahead = any(r["audit"]["prev_hash"] == prev[2]["audit"]["hash"] for r in ahead)
    follows_this = any(r["audit"]["prev_hash"] == record["audit"]["hash"] for r in ahead)
    if successor_ahead:
        return ("reordered", "out of order") if follows_this else ("inserted", "belongs to no chain position")
    if seq > expected:
        return "deleted", "records missing before this one"
    if seq == expected:
        return "modified", "the record before it was rewritten"
    return "reordered", "out of order"


def _checkpoint(record, prev, keys):
    checkpoint = record["audit"].get("checkpoint")
    if checkpoint is None:
        return "modified", "a checkpoint without its checkpoint"
    covers = checkpoint.get("covers") or {}
    if prev is not None and (covers.get("seq") != prev[2]["audit"]["seq"] or covers.get("hash") != prev[2]["audit"]["hash"]):
        return "modified", "the checkpoint does not cover the record before it"
    if not keys:
        return None
    if checkpoint.get("algorithm") != "ed25519":
        return "unsigned_checkpoint", "an unsigned checkpoint in a log verified with keys"
    key = keys.get(checkpoint.get("key_id"))
    if key is None:
        return "untrusted_key", "signed by a key that is not trusted"
    if not signature_ok(key, record, checkpoint):
        return "bad_signature", "the signature does not verify"
    return None


def verify(paths, keys, allow_open_tail=False, witness=None, declared=None):
    lines = list(read_lines(paths))
    records = 0
    seen = set()
    prev = None  # (file, line, record)
    closed = False
    accepted = []
    if declared is None:
        declared = {"torn_lines": 0, "lost_records": 0}
    for i, (path, number, kind, record) in enumerate(lines):
        if kind == "foreign":
            continue
        if kind == "garbage" and prev is not None:
            # A line torn by a failed write, declared by the next record of the chain.
            following = next((r for (_, _, k, r) in lines[i + 1 : i + 1 + WINDOW] if k in ("record", "malformed")), None)
            if following is not None and _is_record(following) and _declares(following, prev):
                declared["torn_lines"] += 1
                continue
        if kind in ("torn", "garbage"):
            raise Damage("truncated" if kind == "torn" else "modified", path, number, None, "not a JSON record")
        seq = record["audit"]["seq"]
        if kind == "malformed":
            raise Damage("modified", path, number, seq if _is_int(seq) else None, "not a well-formed audit record")
        if record_hash(record) != record["audit"]["hash"]:
            raise Damage("modified", path, number, seq, "the record does not match its hash")
        if prev is None or (record["audit"]["prev_hash"] is None and seq == 0):
            if prev is not None and not closed and not allow_open_tail:
                raise Damage("truncated", prev[0], prev[1], prev[2]["audit"]["seq"], "the chain before it was not closed")
        elif record["audit"]["prev_hash"] != prev[2]["audit"]["hash"] or seq != prev[2]["audit"]["seq"] + 1:
            if _declares(record, prev) and seq > prev[2]["audit"]["seq"]:
                # The writer declared the records between as lost (a sink failed).
                declared["lost_records"] += int(seq - prev[2]["audit"]["seq"] - 1)
            else:
                found, message = _break((path, number, record), prev, lines[i + 1 : i + 1 + WINDOW], seen)
                raise Damage(found, path, number, seq, message)
        is_checkpoint = record["event"]["action"] == "audit/checkpoint"
        if is_checkpoint:
            problem = _checkpoint(record, prev, keys)
            if problem is not None:
                raise Damage(problem[0], path, number, seq, problem[1])
        closed = is_checkpoint and prev is not None and prev[2]["event"]["action"] in TERMINAL
        seen.add(record["audit"]["hash"])
        records += 1
        prev = (path, number, record)
        accepted.append(prev)
    if witness is not None:
        _witness(accepted, witness, keys)
    if prev is not None and not closed and not allow_open_tail:
        raise Damage("truncated", prev[0], prev[1], prev[2]["audit"]["seq"], "the chain does not end with a terminal record and its checkpoint")
    return records


# --- §5 witnesses -------------------------------------------------------------------------------


def _objects(line):
    start = line.find("{")
    if start < 0:
        return []
    try:
        value = _loads(line[start:])
    except (ValueError, RecursionError):
        return []
    if not isinstance(value, dict) or not isinstance(value.get("resourceLogs"), list):
        return [value]
    out = []
    for rl in value["resourceLogs"]:
        for sl in rl.get("scopeLogs") or []:
            for lr in sl.get("logRecords") or []:
                body = (lr.get("body") or {}).get("stringValue")
                if isinstance(body, str):
                    try:
                        out.append(_loads(body))
                    except (ValueError, RecursionError):
                        pass
    return out


def read_witness(paths, keys):
    genuine = []
    for path in paths:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            for line in handle:
                for value in _objects(line):
                    if not isinstance(value, dict) or _get(value, "event.action")[0] != "audit/checkpoint":
                        continue
                    checkpoint = _get(value, "audit.checkpoint")[0]
                    if not isinstance(checkpoint, dict) or not _well_formed(value):
                        continue
                    if record_hash(value) != value["audit"]["hash"]:
                        continue
                    if keys:
                        key = keys.get(checkpoint.get("key_id"))
                        if key is None or not signature_ok(key, value, checkpoint):
                            continue
                    genuine.append(value)
    return genuine


def _witness(accepted, witnessed, keys):
    first, last = {}, {}
    for entry in accepted:
        stream = entry[2]["audit"].get("stream")
        first.setdefault(stream, entry[2]["audit"]["seq"])
        last[stream] = entry
    wanted = {}
    for c in witnessed:
        stream = c["audit"].get("stream")
        covers = c["audit"]["checkpoint"]["covers"]
        for seq, digest in ((covers["seq"], covers["hash"]), (c["audit"]["seq"], c["audit"]["hash"])):
            wanted.setdefault((stream, seq), []).append(digest)
    for path, number, record in accepted:
        key = (record["audit"].get("stream"), record["audit"]["seq"])
        for digest in wanted.get(key, []):
            if digest != record["audit"]["hash"]:
                raise Damage("rewritten", path, number, key[1], "a witness received another hash for this position")
    for c in witnessed:
        stream = c["audit"].get("stream")
        if stream not in last or c["audit"]["checkpoint"]["covers"]["seq"] < first[stream]:
            continue
        end = last[stream]
        if c["audit"]["seq"] > end[2]["audit"]["seq"]:
            raise Damage("truncated", end[0], end[1], end[2]["audit"]["seq"], "a witness saw a later position")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", action="append", default=[])
    parser.add_argument("--witness", action="append", default=None)
    parser.add_argument("--allow-open-tail", action="store_true")
    parser.add_argument("--each", action="store_true", help="verify each FILE as a log of its own, one JSON line each")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    try:
        keys = load_keys(args.key)
        witness = None if args.witness is None else read_witness(args.witness, keys)
    except (OSError, ValueError) as error:
        print("verify.py: %s" % error, file=sys.stderr)
        return 2
    status = 0
    for files in [[f] for f in args.files] if args.each else [args.files]:
        declared = {"torn_lines": 0, "lost_records": 0}
        noted = lambda out: dict(out, declared=declared) if any(declared.values()) else out
        try:
            records = verify(files, keys, args.allow_open_tail, witness, declared)
            print(json.dumps(noted({"intact": True, "records": records})))
        except Damage as damage:
            print(json.dumps(noted({"intact": False, "damage": damage.as_json()})))
            status = max(status, 1)
        except (OSError, ValueError) as error:
            print("verify.py: %s" % error, file=sys.stderr)
            return 2
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
