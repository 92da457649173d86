"""Kubernetes resource quantities with exact arithmetic.

A `Quantity` holds the exact value as an integer number of nano-units (1e-9),
so that parsing, comparing, adding and subtracting never lose precision, and
remembers the notation it was written in (decimal SI, binary SI, or decimal
exponent) so that it prints back the way Kubernetes prints it.

This module is the only place that understands the quantity grammar. The
scheduler's hot paths do not touch quantities: the state layer converts them
to plain integers (milli-CPU, bytes, device counts) once, at ingest.

The behaviour follows `k8s.io/apimachinery/pkg/api/resource` on its master
branch; the places where it deliberately does not are listed on
`Quantity.parse` and `Quantity.canonical`.
"""

from __future__ import annotations

import enum
import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Final, NoReturn, cast, final

__all__ = ["Quantity", "QuantityError", "QuantityFormat"]


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity, or a conversion one cannot make."""


class QuantityFormat(enum.Enum):
    """The notation a quantity is printed in, as Kubernetes names it."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_DECIMAL_SI: Final = QuantityFormat.DECIMAL_SI
_BINARY_SI: Final = QuantityFormat.BINARY_SI
_DECIMAL_EXPONENT: Final = QuantityFormat.DECIMAL_EXPONENT

_NANO: Final = 1_000_000_000
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
# Kubernetes clamps a binary-suffixed spelling to the int64 range when it is
# parsed (not when it is computed), so "8Ei" reads back as 2^63-1.
_BINARY_CAP_NANO: Final = _INT64_MAX * _NANO
# Upstream accepts exponents up to the int32 range and would then try to
# materialise 10^2147483647; no cluster holds anything near 10^1000, and the
# bound keeps every parsed value far inside Python's int/str conversion limit.
_MAX_NANO_DIGITS: Final = 1010
# A decimal digit past this many fractional places cannot move a value across a
# multiple of 1n / 2^60 (those need at most 9 + 60 places), so a binary-suffixed
# mantissa can be cut there, keeping a sticky non-zero digit for the rounding.
_BINARY_FRACTION_DIGITS: Final = 70
_MAX_EXPONENT: Final = (1 << 31) - 1

# The upstream error texts, so messages read the same as kubectl's.
_REGEX_TEXT: Final = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_ERR_FORMAT: Final = f"quantities must match the regular expression '{_REGEX_TEXT}'"
_ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
_ERR_SUFFIX: Final = "unable to parse quantity's suffix"

# The shape upstream's hand-written scanner accepts: sign, digits, an optional
# point with digits, then suffix letters, an optional sign and digits. Explicit
# [0-9] classes keep out the Unicode digits that int() and str.isdigit() accept.
# Both quantifiers next to the point are greedy, and the suffix cannot contain a
# point, so the first split the engine finds is the one the scanner makes.
_GRAMMAR: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT: Final = re.compile(r"([+-]?)([0-9]+)")
# Most quantities on the wire are a short unsigned integer with a plain suffix.
_SIMPLE: Final = re.compile(r"([0-9]{1,18})([numkMGTPE]?|[KMGTPE]i)")

# suffix -> (power of ten, power of two, format)
_SUFFIXES: Final[dict[str, tuple[int, int, QuantityFormat]]] = {
    "n": (-9, 0, _DECIMAL_SI),
    "u": (-6, 0, _DECIMAL_SI),
    "m": (-3, 0, _DECIMAL_SI),
    "": (0, 0, _DECIMAL_SI),
    "k": (3, 0, _DECIMAL_SI),
    "M": (6, 0, _DECIMAL_SI),
    "G": (9, 0, _DECIMAL_SI),
    "T": (12, 0, _DECIMAL_SI),
    "P": (15, 0, _DECIMAL_SI),
    "E": (18, 0, _DECIMAL_SI),
    "Ki": (0, 10, _BINARY_SI),
    "Mi": (0, 20, _BINARY_SI),
    "Gi": (0, 30, _BINARY_SI),
    "Ti": (0, 40, _BINARY_SI),
    "Pi": (0, 50, _BINARY_SI),
    "Ei": (0, 60, _BINARY_SI),
}
# suffix -> (nano-units per unit of the mantissa, format), for the fast path
_SIMPLE_SCALES: Final[dict[str, tuple[int, QuantityFormat]]] = {
    suffix: (10 ** (ten + 9) << two, fmt) for suffix, (ten, two, fmt) in _SUFFIXES.items()
}
_DECIMAL_SI_SUFFIXES: Final = {ten: suffix for suffix, (ten, two, _) in _SUFFIXES.items() if two == 0}
_BINARY_SI_SUFFIXES: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")

_PARSE_CACHE: dict[str, Quantity] = {}
# Ingest sees the same few spellings ("1", "100m", "80Gi") over and over, and a
# Quantity is immutable, so parsed values are shared; the bound keeps a stream
# of distinct values, or of very long spellings, from growing it without limit.
_PARSE_CACHE_SIZE: Final = 4096
_PARSE_CACHE_KEY_LENGTH: Final = 32


@final
class Quantity:
    """An exact Kubernetes quantity; immutable, hashable, ordered by value.

    Equality, ordering and hashing look at the value only: ``1Gi == 1024Mi``,
    and a quantity equals the int of the same value (ints count whole units).
    The format only decides how the quantity prints.
    """

    __slots__ = ("_format", "_nano")

    _nano: int
    _format: QuantityFormat

    def __init__(self, nano: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> None:
        """Build the quantity worth exactly ``nano`` * 1e-9, printed in ``fmt``."""
        if not isinstance(nano, int) or isinstance(nano, bool):
            raise TypeError(f"nano must be an int, not {type(nano).__name__}")
        if not isinstance(fmt, QuantityFormat):
            raise TypeError(f"fmt must be a QuantityFormat, not {type(fmt).__name__}")
        _set_nano(self, int(nano))
        _set_format(self, fmt)

    # -- construction ------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse Kubernetes quantity text, as ``resource.ParseQuantity`` does.

        The grammar is an optional sign, digits with an optional fraction
        (``.5`` and ``5.`` both count), and one suffix: binary ``Ki Mi Gi Ti Pi
        Ei``, decimal ``n u m k M G T P E`` or none, or ``e``/``E`` followed by
        a signed integer. The suffix decides the format. Values finer than 1n
        are rounded away from zero to the next nano-unit; binary-suffixed
        values are clamped to +-(2^63-1), and those that round to below one
        unit in magnitude switch to decimal SI, as upstream does.

        Deliberate differences from upstream, which never concern a spelling
        the API server itself emits:

        * a mantissa without any digit (``Gi``, ``.``, ``-``, ``e3``) is
          rejected; upstream's scanner reads most of those as zero, against
          its own documented grammar;
        * values of 10^1001 or more are rejected; upstream accepts exponents
          up to 2^31-1 and then spends unbounded memory on them.

        Raises `QuantityError` (a `ValueError`) for anything else.
        """
        cached = _PARSE_CACHE.get(text)
        if cached is not None:
            return cached
        if not isinstance(text, str):
            raise TypeError(f"quantity text must be a str, not {type(text).__name__}")
        quantity = _parse(text)
        if len(text) <= _PARSE_CACHE_KEY_LENGTH:
            if len(_PARSE_CACHE) >= _PARSE_CACHE_SIZE:
                _PARSE_CACHE.clear()
            _PARSE_CACHE[text] = quantity
        return quantity

    @classmethod
    def from_int(cls, value: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        """The quantity of ``value`` whole units (``NewQuantity``)."""
        return cls(_require_int(value) * _NANO, fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        """The quantity of ``milli`` thousandths (``NewMilliQuantity``)."""
        return cls(_require_int(milli) * 1_000_000, fmt)

    @classmethod
    def coerce(cls, raw: object) -> Quantity:
        """Read a quantity the way a manifest or JSON document hands it over.

        Strings are parsed. Ints (YAML ``cpu: 2``) are whole units in decimal
        SI. Floats (YAML ``memory: 1.5``) reach Kubernetes as the JSON number
        Go writes for them, i.e. the shortest decimal that reads back as the
        same float, so ``0.1`` is exactly 100m, not the binary fraction
        nearest to it. Anything else, bools included, is a `QuantityError`.
        """
        if isinstance(raw, str):
            return cls.parse(raw)
        if isinstance(raw, bool):
            raise QuantityError(f"{raw!r}: a quantity must be a string or a number, not a bool")
        if isinstance(raw, int):
            return cls.from_int(raw)
        if isinstance(raw, float):
            return cls.parse(_go_json_float(raw))
        raise QuantityError(f"{raw!r}: a quantity must be a string or a number, not {type(raw).__name__}")

    # -- accessors -----------------------------------------------------------

    @property
    def nano(self) -> int:
        """The exact value in nano-units (1e-9)."""
        return self._nano

    @property
    def format(self) -> QuantityFormat:
        """The notation the quantity prints in."""
        return self._format

    def value(self) -> int:
        """The value rounded to a whole unit away from zero, like Go's ``Value()``.

        Upstream documents and tests away-from-zero for negative values
        (``-1500m`` gives -2). Unlike Go's, the result stays exact past int64
        instead of overflowing.
        """
        return _round_away(self._nano, _NANO)

    def milli_value(self) -> int:
        """The value in thousandths, rounded away from zero like ``MilliValue()``."""
        return _round_away(self._nano, 1_000_000)

    def as_fraction(self) -> Fraction:
        """The exact value as a fraction of whole units."""
        return Fraction(self._nano, _NANO)

    def is_integer(self) -> bool:
        """Whether `as_integer` succeeds: a whole number within int64.

        This is CEL's ``isInteger()`` contract. It is decided by value, where
        Go's ``AsInt64`` also depends on the internal representation (it says
        no to ``1000m`` and to anything parsed through its decimal fallback,
        such as ``1.5Gi``).
        """
        units, rest = divmod(self._nano, _NANO)
        return not rest and _INT64_MIN <= units <= _INT64_MAX

    def as_integer(self) -> int:
        """The exact value as an int64, for CEL's ``asInteger()``.

        Raises `QuantityError` if the value has a fractional part or does not
        fit an int64.
        """
        units, rest = divmod(self._nano, _NANO)
        if rest:
            raise QuantityError(f"cannot convert value to integer: {self} has a fractional part")
        if not _INT64_MIN <= units <= _INT64_MAX:
            raise QuantityError(f"cannot convert value to integer: {self} does not fit in int64")
        return units

    def as_approximate_float(self) -> float:
        """The nearest float; +-inf when the value is beyond float range."""
        try:
            return self._nano / _NANO
        except OverflowError:
            return math.inf if self._nano > 0 else -math.inf

    def sign(self) -> int:
        """-1, 0 or 1 according to the sign of the value."""
        return (self._nano > 0) - (self._nano < 0)

    # -- arithmetic ----------------------------------------------------------
    #
    # Upstream keeps the receiver's format unless the receiver is zero, in which
    # case it takes the other operand's; CEL turns an int operand into a
    # DecimalExponent quantity first. Both rules are followed here, an int on
    # the left counting as the receiver.

    def __add__(self, other: Quantity | int) -> Quantity:
        if isinstance(other, Quantity):
            theirs, their_format = other._nano, other._format
        elif isinstance(other, int) and not isinstance(other, bool):
            theirs, their_format = other * _NANO, _DECIMAL_EXPONENT
        else:
            return NotImplemented
        return _make(self._nano + theirs, self._format if self._nano else their_format)

    def __radd__(self, other: int) -> Quantity:
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        return _make(other * _NANO + self._nano, _DECIMAL_EXPONENT if other else self._format)

    def __sub__(self, other: Quantity | int) -> Quantity:
        if isinstance(other, Quantity):
            theirs, their_format = other._nano, other._format
        elif isinstance(other, int) and not isinstance(other, bool):
            theirs, their_format = other * _NANO, _DECIMAL_EXPONENT
        else:
            return NotImplemented
        return _make(self._nano - theirs, self._format if self._nano else their_format)

    def __rsub__(self, other: int) -> Quantity:
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        return _make(other * _NANO - self._nano, _DECIMAL_EXPONENT if other else self._format)

    def __neg__(self) -> Quantity:
        return _make(-self._nano, self._format)

    # -- comparison ----------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self._nano == other._nano
        if isinstance(other, int) and not isinstance(other, bool):
            return self._nano == other * _NANO
        return NotImplemented

    def __hash__(self) -> int:
        # Python's numeric hash, so that equal quantities and ints hash alike.
        units, rest = divmod(self._nano, _NANO)
        if not rest:
            return hash(units)
        return hash(Fraction(self._nano, _NANO))

    def __lt__(self, other: Quantity | int) -> bool:
        theirs = _other_nano(other)
        if theirs is None:
            return NotImplemented
        return self._nano < theirs

    def __le__(self, other: Quantity | int) -> bool:
        theirs = _other_nano(other)
        if theirs is None:
            return NotImplemented
        return self._nano <= theirs

    def __gt__(self, other: Quantity | int) -> bool:
        theirs = _other_nano(other)
        if theirs is None:
            return NotImplemented
        return self._nano > theirs

    def __ge__(self, other: Quantity | int) -> bool:
        theirs = _other_nano(other)
        if theirs is None:
            return NotImplemented
        return self._nano >= theirs

    # -- printing ------------------------------------------------------------

    def canonical(self) -> str:
        """The canonical spelling, as Go's ``CanonicalizeBytes`` builds it.

        The mantissa is an integer and the exponent the largest multiple of
        three that keeps it one. Decimal SI uses the suffixes ``n`` to ``E``
        and falls back to ``e`` notation past them. Binary SI applies only to
        whole values of at least 1024, which print with the largest of ``Ki``
        to ``Ei`` that divides them, or bare when none does; other values print
        as decimal SI, and a whole value with more factors of 1024 than ``Ei``
        covers prints as decimal exponent, as upstream master does.

        Go's ``String()`` differs on one point: a value parsed on its fast path
        from certain non-canonical spellings (``1.441``, ``+1``, ``01``,
        ``1e0``) echoes the input verbatim; upstream tracks that as a bug
        (kubernetes#138165). This method always returns the canonical form,
        which is what Go prints for the same value reached any other way.
        """
        nano = self._nano
        if not nano:
            return "0"
        fmt = self._format
        if fmt is _BINARY_SI:
            magnitude = -nano if nano < 0 else nano
            units, rest = divmod(magnitude, _NANO)
            if rest or units < 1024:
                fmt = _DECIMAL_SI
            else:
                powers = ((units & -units).bit_length() - 1) // 10
                if powers < len(_BINARY_SI_SUFFIXES):
                    sign = "-" if nano < 0 else ""
                    return f"{sign}{units >> (10 * powers)}{_BINARY_SI_SUFFIXES[powers]}"
                fmt = _DECIMAL_EXPONENT
        return _decimal_text(nano, fmt)

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    # -- immutability ----------------------------------------------------------

    if not TYPE_CHECKING:
        # Hidden from type checkers, which would otherwise take a __setattr__ as
        # licence for assigning any attribute name.

        def __setattr__(self, name: str, value: object) -> NoReturn:
            raise AttributeError(f"Quantity is immutable; cannot set {name!r}")

        def __delattr__(self, name: str) -> NoReturn:
            raise AttributeError(f"Quantity is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[type[Quantity], tuple[int, QuantityFormat]]:
        # The default slot-based pickling would go through __setattr__.
        return (Quantity, (self._nano, self._format))


# The slots are written through their descriptors, which __setattr__ cannot
# intercept; it is also the quickest way in, and parsing creates many objects.
_new = object.__new__
_set_nano = Quantity.__dict__["_nano"].__set__
_set_format = Quantity.__dict__["_format"].__set__


def _make(nano: int, fmt: QuantityFormat) -> Quantity:
    """Build a Quantity from trusted parts, skipping __init__'s type checks."""
    quantity: Quantity = _new(Quantity)
    _set_nano(quantity, nano)
    _set_format(quantity, fmt)
    return quantity


def _require_int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an int, not {type(value).__name__}")
    return int(value)


def _other_nano(other: object) -> int | None:
    if isinstance(other, Quantity):
        return other._nano
    if isinstance(other, int) and not isinstance(other, bool):
        return other * _NANO
    return None


def _round_away(nano: int, unit: int) -> int:
    magnitude = -(-abs(nano) // unit)
    return magnitude if nano >= 0 else -magnitude


def _fail(text: str, reason: str) -> NoReturn:
    raise QuantityError(f"{text!r}: {reason}")


def _parse(text: str) -> Quantity:
    simple = _SIMPLE.fullmatch(text)
    if simple is not None:
        digits, suffix = simple.groups()
        scale, fmt = _SIMPLE_SCALES[suffix]
        nano = int(digits) * scale
        if nano > _BINARY_CAP_NANO and fmt is _BINARY_SI:
            nano = _BINARY_CAP_NANO
        return _make(nano, fmt)

    match = _GRAMMAR.fullmatch(text)
    if match is None or not text:
        _fail(text, _ERR_FORMAT)
    sign, whole, fraction, suffix = match.groups()
    if fraction is None:
        fraction = ""
    if not whole and not fraction:
        _fail(text, _ERR_NUMERIC)

    entry = _SUFFIXES.get(suffix)
    if entry is not None:
        ten, two, fmt = entry
    else:
        ten, two, fmt = _exponent_suffix(text, suffix), 0, _DECIMAL_EXPONENT

    # value = int(significant) * 10**scale * 10**ten * 2**two
    digits = (whole + fraction).lstrip("0")
    significant = digits.rstrip("0")
    scale = len(digits) - len(significant) - len(fraction)
    if not significant:
        nano = 0
    elif two:
        nano = _binary_nano(significant, scale, two)
        if nano < _NANO:
            # Upstream's reasoning: binary notation has nothing to offer below 1.
            fmt = _DECIMAL_SI
    else:
        nano = _decimal_nano(text, significant, scale + ten + 9)
    return _make(-nano if sign == "-" else nano, fmt)


def _exponent_suffix(text: str, suffix: str) -> int:
    """The power of ten an ``e``/``E`` suffix names, within upstream's int32 bounds."""
    if len(suffix) > 1 and suffix[0] in "eE":
        match = _EXPONENT.fullmatch(suffix, 1)
        if match is not None:
            sign, digits = match.groups()
            # Strip zeros first: int() refuses very long digit strings, and
            # Go's ParseInt happily reads "e000…03".
            digits = digits.lstrip("0") or "0"
            if len(digits) <= 10:
                exponent = int(digits)
                if exponent <= _MAX_EXPONENT:
                    return -exponent if sign == "-" else exponent
    _fail(text, _ERR_SUFFIX)


def _pow10(exponent: int) -> int:
    # A non-negative int power is an int; typeshed cannot see the sign.
    return cast(int, 10**exponent)


def _decimal_nano(text: str, significant: str, shift: int) -> int:
    """``int(significant) * 10**shift`` rounded up, for a mantissa with no trailing zeros."""
    kept = len(significant) + shift
    if kept > _MAX_NANO_DIGITS:
        _fail(text, "quantities must be smaller than 10^1001")
    if shift >= 0:
        return int(significant) * _pow10(shift)
    if kept <= 0:
        return 1
    # The dropped digits end in a non-zero digit, so rounding up always adds one;
    # slicing the string avoids building 10**-shift for absurd exponents.
    return int(significant[:kept]) + 1


def _binary_nano(significant: str, scale: int, two: int) -> int:
    """``int(significant) * 10**scale * 2**two`` in nano-units, rounded up and capped."""
    if len(significant) + scale > 19:
        # The mantissa alone is at least 10^19 > 2^63.
        return _BINARY_CAP_NANO
    if -scale > _BINARY_FRACTION_DIGITS:
        significant = significant[: len(significant) + scale + _BINARY_FRACTION_DIGITS] + "1"
        scale = -_BINARY_FRACTION_DIGITS - 1
    shift = scale + 9
    if shift >= 0:
        nano = (int(significant) * _pow10(shift)) << two
    else:
        nano = -(-(int(significant) << two) // _pow10(-shift))
    return min(nano, _BINARY_CAP_NANO)


def _decimal_text(nano: int, fmt: QuantityFormat) -> str:
    """Spell a non-zero value as a mantissa and a power of ten that is a multiple of 3."""
    sign = "-" if nano < 0 else ""
    digits = str(-nano if nano < 0 else nano)
    mantissa = digits.rstrip("0")
    exponent = len(digits) - len(mantissa) - 9
    lower = exponent % 3
    if lower:
        mantissa += "0" * lower
        exponent -= lower
    if fmt is _DECIMAL_SI:
        suffix = _DECIMAL_SI_SUFFIXES.get(exponent)
        if suffix is not None:
            return f"{sign}{mantissa}{suffix}"
    elif not exponent:
        return f"{sign}{mantissa}"
    return f"{sign}{mantissa}e{exponent}"


def _go_json_float(value: float) -> str:
    """The text Go's encoding/json writes for a float64, which is what ParseQuantity sees."""
    if not math.isfinite(value):
        raise QuantityError(f"{value!r}: a quantity must be a finite number")
    # repr() is the shortest decimal that reads back as the same float, as in Go;
    # Go switches to exponent notation outside [1e-6, 1e21).
    exact = Decimal(repr(value))
    magnitude = abs(value)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        return format(exact, "f")
    return format(exact, "e")
