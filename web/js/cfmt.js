// printf for the messages the page shares with the C code: the same format strings (%s, %zu, %g, %.Ng, %.Nf, the
// '+' flag, %%) print the same text, so a finding reads alike in `eco validate` and on the page, and a grep for a
// message finds both. Rounding is glibc's: the exact binary value, an exact tie to even (0.125 to two places is
// 0.12, where JavaScript's toFixed says 0.13), and -0 keeps its sign.

// x (finite, >= 0) to `places` decimals, an exact tie to even: toFixed rounds ties up, so a tie it rounded up is
// stepped back when its last kept digit came out odd.
function fixedHalfEven(x, places) {
  if (x >= 1e21) return BigInt(x).toString() + (places > 0 ? `.${'0'.repeat(places)}` : ''); // an integer: no tie
  const s = x.toFixed(places);
  const exact = x.toFixed(Math.min(100, places + 60)); // the exact decimal expansion of any double this prints
  const tail = exact.slice(exact.length - (Math.min(100, places + 60) - places));
  if (!/^50*$/.test(tail)) return s;
  const digits = s.replace('.', '');
  if (Number(digits[digits.length - 1]) % 2 === 0) return s;
  // the tie went up to an odd digit: the even neighbour is one unit of the last place below
  const down = BigInt(digits) - 1n;
  let t = down.toString().padStart(digits.length, '0');
  if (places > 0) t = `${t.slice(0, t.length - places)}.${t.slice(t.length - places)}`;
  return t.replace(/^(-?)0+(?=\d)/, '$1');
}

// x to `digits` significant digits in %e form (mantissa, exponent), an exact tie to even, as toExponential but
// from fixedHalfEven on the scaled value's exact digits.
function expHalfEven(x, digits) {
  const e0 = x === 0 ? 0 : Math.floor(Math.log10(x));
  for (const e of [e0 - 1, e0, e0 + 1]) {
    const places = digits - 1 - e;
    if (places < 0 || places > 100) continue;
    const f = fixedHalfEven(x, places);
    const lead = f.replace('.', '').replace(/^0+/, '');
    if (lead.length === digits && Number(f) >= 10 ** e && Number(f) < 10 ** (e + 1)) {
      return [`${lead[0]}${digits > 1 ? '.' : ''}${lead.slice(1)}`, e];
    }
  }
  const [m, ex] = x.toExponential(digits - 1).split('e'); // out of fixed range: JavaScript's rounding
  return [m, Number(ex)];
}

function trimZeros(s) {
  // %g drops trailing zeros of the fraction, and the point if nothing follows it
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

function formatG(x, precision) {
  const p = precision === 0 ? 1 : precision;
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const sign = x < 0 ? '-' : '';
  const [m, e] = expHalfEven(Math.abs(x), p);
  if (e < -4 || e >= p) return `${sign}${trimZeros(m)}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return sign + trimZeros(fixedHalfEven(Math.abs(x), p - 1 - e));
}

function formatNumber(x, conv, precision, plus) {
  if (typeof x !== 'number') x = Number(x);
  let s;
  if (Number.isNaN(x)) s = 'nan';
  else if (!Number.isFinite(x)) s = x < 0 ? '-inf' : 'inf';
  else if (conv === 'f') s = (x < 0 || Object.is(x, -0) ? '-' : '') + fixedHalfEven(Math.abs(x), precision ?? 6);
  else if (conv === 'g') s = formatG(x, precision ?? 6);
  else s = String(Math.trunc(x)); // d, zu
  if (plus && !s.startsWith('-')) s = `+${s}`;
  return s;
}

export function cfmt(format, ...args) {
  let k = 0;
  return format.replace(/%(\+)?(?:\.(\d+))?(zu|s|d|f|g|%)/g, (whole, plus, prec, conv) => {
    if (conv === '%') return '%';
    const v = args[k++];
    if (conv === 's') return String(v);
    return formatNumber(v, conv === 'zu' ? 'd' : conv, prec === undefined ? undefined : Number(prec), plus === '+');
  });
}
