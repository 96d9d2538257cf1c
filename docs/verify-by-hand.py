#!/usr/bin/env python3
"""Check a run's event chain by hand, independently of the TypeScript code.

Python 3.8+ standard library only. See docs/format.md ("Verify by hand").

  python3 verify-by-hand.py jcs [KEY ...] < value.json
      print the RFC 8785 (JCS) text of one JSON value (no trailing newline), after
      removing the named top-level keys (e.g. `jcs event_hash` for an envelope)

  sqlite3 events.db "select envelope from events order by seq" | python3 verify-by-hand.py chain
      check every envelope (one per line, as sqlite3 prints them): stored text is
      canonical, payload_hash, event_hash, seq contiguity, chain links, genesis,
      StoreOpened first (and naming its own subject_id), one subject_id, event_id
      derivation, at most one StoreSealed and nothing after it; prints one line per
      event and whether the chain is sealed, exits 1 on any failure

Signatures are not checked here: use openssl (docs/format.md shows the commands).
"""
import decimal
import hashlib
import json
import re
import sys

GENESIS = "sha256:" + "0" * 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def parse(text):
    """JSON.parse-compatible: refuses NaN/Infinity; duplicate keys keep the last value."""
    return json.loads(text, parse_constant=_reject_constant)


def _number(x):
    """ECMAScript Number::toString of a finite double (what RFC 8785 prescribes)."""
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError("NaN/Infinity has no JSON form")
    if x == 0:
        return "0"  # also for -0
    sign = "-" if x < 0 else ""
    # repr() gives the shortest digits that round-trip, as ECMAScript does.
    _, digits, exp = decimal.Decimal(repr(abs(x))).as_tuple()
    s = "".join(map(str, digits))
    stripped = s.rstrip("0")
    exp += len(s) - len(stripped)
    s = stripped
    k = len(s)
    n = exp + k  # value = 0.s * 10**n
    if k <= n <= 21:
        out = s + "0" * (n - k)
    elif 0 < n <= 21:
        out = s[:n] + "." + s[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + s
    else:
        e = n - 1
        out = s[0] + ("." + s[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out


def _string(s):
    if _SURROGATE.search(s):
        raise ValueError("lone surrogate in a string has no canonical form")
    # json.dumps with ensure_ascii=False escapes exactly what JCS escapes:
    # " \ and U+0000..U+001F (\b \t \n \f \r short forms, others \u00xx lowercase).
    return json.dumps(s, ensure_ascii=False)


def jcs(value):
    """RFC 8785 canonical text of a value produced by parse()."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        # JSON.parse reads every number as a double: large integers lose precision.
        return str(value) if abs(value) <= 2**53 else _number(float(value))
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, dict):
        # Keys sorted by UTF-16 code units (not by code points as sort_keys does).
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(_string(k) + ":" + jcs(value[k]) for k in keys) + "}"
    raise ValueError(f"{type(value).__name__} has no JSON form")


def sha256(text):
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


MAX_SEQ = 0xFFFFFFFFFFFF  # the largest seq the 12 leading hex digits of an event_id can hold


def event_id_for(subject_id, seq):
    """UUIDv8 ssssssss-ssss-8hhh-Vhhh-hhhhhhhhhhhh (schema/envelope-hash.ts eventIdFor).

    s = seq as 12 hex digits; h = hex digits 0..2, 4..6 and 7..18 of
    sha256("ds-event-id\n" + subject_id + "\n" + decimal(seq)); V = 8 + (hex digit 3 & 3).
    None when seq is outside 1..MAX_SEQ (no event can be stored there).
    """
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= MAX_SEQ:
        return None
    s = "%012x" % seq
    h = hashlib.sha256(f"ds-event-id\n{subject_id}\n{seq}".encode("utf-8")).hexdigest()
    variant = "%x" % ((int(h[3], 16) & 0x3) | 0x8)
    return f"{s[0:8]}-{s[8:12]}-8{h[0:3]}-{variant}{h[4:7]}-{h[7:19]}"


ENVELOPE_KEYS = sorted([
    "event_id", "subject_id", "seq", "event_type", "schema_version", "occurred_at", "recorded_at", "actor",
    "causation_id", "correlation_id", "idempotency_key", "previous_event_hash", "payload", "payload_hash", "event_hash",
])


def check_chain(lines):
    failures = 0
    count = 0
    expected_seq = 1
    previous = GENESIS
    subject = None
    sealed_at = None
    for line in lines:
        text = line.rstrip("\n")
        if not text:
            continue
        problems = []
        count += 1
        try:
            env = parse(text)
        except ValueError as error:
            print(f"seq ?: not JSON ({error})")
            failures += 1
            previous = None
            continue
        if not isinstance(env, dict):
            print("seq ?: not a JSON object")
            failures += 1
            previous = None
            continue
        seq = env.get("seq")
        try:
            if jcs(env) != text:
                problems.append("stored text is not canonical (RFC 8785)")
        except ValueError as error:
            problems.append(f"no canonical form: {error}")
        if sorted(env) != ENVELOPE_KEYS:
            problems.append(f"envelope keys are {sorted(env)}")
        if seq != expected_seq:
            problems.append(f"seq {seq}, expected {expected_seq}")
        if isinstance(seq, int):
            expected_seq = seq + 1
        if previous is None:
            problems.append("chain link unchecked (previous event unreadable)")
        elif env.get("previous_event_hash") != previous:
            problems.append("previous_event_hash is not the event_hash of the event before"
                            + (" (seq 1 must link to sha256:000…0)" if seq == 1 else ""))
        try:
            if sha256(jcs(env.get("payload"))) != env.get("payload_hash"):
                problems.append("payload_hash does not match the payload")
            rest = {k: v for k, v in env.items() if k != "event_hash"}
            if sha256(jcs(rest)) != env.get("event_hash"):
                problems.append("event_hash does not match the envelope")
        except ValueError as error:
            problems.append(f"cannot hash: {error}")
        if seq == 1:
            if env.get("event_type") != "SystemEvent.StoreOpened":
                problems.append("the first event is not SystemEvent.StoreOpened")
            elif not isinstance(env.get("payload"), dict) or env["payload"].get("subject_id") != env.get("subject_id"):
                problems.append("StoreOpened payload.subject_id differs from its envelope subject_id")
            subject = env.get("subject_id")
        elif env.get("event_type") == "SystemEvent.StoreOpened":
            problems.append("a second SystemEvent.StoreOpened")
        # The seal ends the store: a second one, or anything after it, was inserted
        # outside the writer (which refuses it, as does a trigger in events.db).
        if sealed_at is not None:
            if env.get("event_type") == "SystemEvent.StoreSealed":
                problems.append(f"a second SystemEvent.StoreSealed (sealed at seq {sealed_at})")
            else:
                problems.append(f"follows SystemEvent.StoreSealed at seq {sealed_at}: nothing may follow the seal")
        elif env.get("event_type") == "SystemEvent.StoreSealed":
            sealed_at = seq
        if subject is not None and env.get("subject_id") != subject:
            problems.append("subject_id differs from seq 1")
        if isinstance(seq, int) and not isinstance(seq, bool):
            derived = event_id_for(env.get("subject_id"), seq)
            if derived is None:
                problems.append(f"seq {seq} is outside 1..{MAX_SEQ}: no event_id can be derived")
            elif env.get("event_id") != derived:
                problems.append("event_id is not the one derived from subject_id and seq")
        previous = env.get("event_hash")
        if problems:
            failures += 1
            print(f"seq {seq}: FAIL " + "; ".join(problems))
        else:
            print(f"seq {seq}: ok {env.get('event_type')} {env.get('event_hash')}")
    if count == 0:
        print("no events")
        return 1
    print(f"{count} events, {failures} with failures; "
          + (f"sealed at seq {sealed_at}" if sealed_at is not None else "not sealed (no SystemEvent.StoreSealed)"))
    return 1 if failures else 0


def main(argv):
    sys.stdout.reconfigure(encoding="utf-8")
    if len(argv) >= 2 and argv[1] == "jcs":
        value = parse(sys.stdin.buffer.read().decode("utf-8"))
        for key in argv[2:]:
            value.pop(key)
        sys.stdout.write(jcs(value))
        return 0
    if len(argv) == 2 and argv[1] == "chain":
        return check_chain(sys.stdin.buffer.read().decode("utf-8").split("\n"))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
