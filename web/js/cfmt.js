// printf for the messages the page shares with the C code: the same format strings (%s, %zu, %g, %.Ng, %.Nf, the
// '+' flag, %%) print the same text, so a finding reads alike in `eco validate` and on the page, and a grep for a
// message finds both. Numbers round as JavaScript's toFixed/toExponential do (an exact tie, such as 0.125 to two
// places, goes up where glibc goes to even).

function trimZeros(s) {
  // %g drops trailing zeros of the fraction, and the point if nothing follows it
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

function formatG(x, precision) {
  const p = precision === 0 ? 1 : precision;
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [, exp] = x.toExponential(p - 1).split('e');
  const e = Number(exp);
  if (e < -4 || e >= p) {
    const [m] = x.toExponential(p - 1).split('e');
    return `${trimZeros(m)}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  return trimZeros(x.toFixed(p - 1 - e));
}

function formatNumber(x, conv, precision, plus) {
  if (typeof x !== 'number') x = Number(x);
  let s;
  if (Number.isNaN(x)) s = 'nan';
  else if (!Number.isFinite(x)) s = x < 0 ? '-inf' : 'inf';
  else if (conv === 'f') s = x.toFixed(precision ?? 6);
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
