// Small, dependency-free SVG charts for docs/bench: horizontal bars with min-max whiskers and
// target marks, and line charts with whiskers. Each returns the SVG text.

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';
export const COLORS = ['#2563eb', '#f59e0b', '#10b981', '#ef4444', '#8b5cf6', '#64748b'];

const esc = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const num = (v) => Number(v.toFixed(2));

/** Round-number ticks from 0 (or `min`) to at least `max`. */
function ticks(max, count = 5) {
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  if (out[out.length - 1] < max) out.push(Number((out[out.length - 1] + step).toPrecision(12)));
  return out;
}

function fmt(v) {
  if (v === 0) return '0';
  if (Math.abs(v) >= 1000) return v.toLocaleString('en-US', { maximumFractionDigits: 0 });
  if (Math.abs(v) >= 10) return v.toFixed(0);
  if (Math.abs(v) >= 1) return v.toFixed(1).replace(/\.0$/, '');
  return v.toPrecision(2);
}

function header(width, height, title, subtitle) {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="24" font-size="15" font-weight="600" fill="#111827">${esc(title)}</text>`,
    subtitle ? `<text x="16" y="42" fill="#4b5563">${esc(subtitle)}</text>` : '',
  ];
}

/**
 * Horizontal bars: `rows` of {label, median, min, max, target?, note?, color?}. A `target` draws
 * a dashed mark on its row; `refLine` a dashed line across all rows (e.g. 1x).
 */
export function hbar({ title, subtitle, unit = '', rows, refLine, refLabel, width = 760 }) {
  const labelW = Math.min(360, Math.max(120, Math.max(...rows.map((r) => String(r.label).length)) * 6.8 + 24));
  const right = 110;
  const top = subtitle ? 62 : 46;
  const rowH = 30;
  const plotW = width - labelW - right;
  const height = top + rows.length * rowH + 40;
  const maxV = Math.max(...rows.flatMap((r) => [r.max ?? r.median, r.target ?? 0, refLine ?? 0])) * 1.05;
  const tk = ticks(maxV);
  const xmax = tk[tk.length - 1];
  const x = (v) => labelW + (v / xmax) * plotW;
  const out = header(width, height, title, subtitle);
  const plotBottom = top + rows.length * rowH;
  for (const t of tk) {
    out.push(`<line x1="${num(x(t))}" y1="${top - 4}" x2="${num(x(t))}" y2="${plotBottom}" stroke="#e5e7eb"/>`);
    out.push(`<text x="${num(x(t))}" y="${plotBottom + 16}" text-anchor="middle" fill="#6b7280">${esc(fmt(t))}${esc(unit)}</text>`);
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    const color = r.color ?? COLORS[0];
    out.push(`<text x="${labelW - 8}" y="${y + rowH / 2 + 4}" text-anchor="end" fill="#111827">${esc(r.label)}</text>`);
    out.push(`<rect x="${labelW}" y="${y + 6}" width="${num(Math.max(0, x(r.median) - labelW))}" height="${rowH - 12}" fill="${color}" opacity="0.85" rx="2"/>`);
    if (r.min != null && r.max != null) {
      const cy = y + rowH / 2;
      out.push(`<line x1="${num(x(r.min))}" y1="${cy}" x2="${num(x(r.max))}" y2="${cy}" stroke="#111827" stroke-width="1.2"/>`);
      for (const v of [r.min, r.max]) out.push(`<line x1="${num(x(v))}" y1="${cy - 5}" x2="${num(x(v))}" y2="${cy + 5}" stroke="#111827" stroke-width="1.2"/>`);
    }
    if (r.target != null) {
      out.push(`<line x1="${num(x(r.target))}" y1="${y + 2}" x2="${num(x(r.target))}" y2="${y + rowH - 2}" stroke="#dc2626" stroke-width="2" stroke-dasharray="3 2"/>`);
    }
    out.push(`<text x="${width - right + 8}" y="${y + rowH / 2 + 4}" fill="#111827">${esc(r.note ?? fmt(r.median) + unit)}</text>`);
  });
  if (refLine != null) {
    out.push(`<line x1="${num(x(refLine))}" y1="${top - 6}" x2="${num(x(refLine))}" y2="${plotBottom}" stroke="#111827" stroke-dasharray="4 3"/>`);
    if (refLabel) out.push(`<text x="${num(x(refLine)) + 4}" y="${top - 8}" fill="#111827">${esc(refLabel)}</text>`);
  }
  const legend = rows.some((r) => r.target != null)
    ? `<line x1="${labelW}" y1="${height - 10}" x2="${labelW + 14}" y2="${height - 10}" stroke="#dc2626" stroke-width="2" stroke-dasharray="3 2"/><text x="${labelW + 20}" y="${height - 6}" fill="#4b5563">target</text><text x="${labelW + 80}" y="${height - 6}" fill="#4b5563">bar: median; whisker: min-max over repeats</text>`
    : `<text x="${labelW}" y="${height - 6}" fill="#4b5563">bar: median; whisker: min-max over repeats</text>`;
  out.push(legend, '</svg>');
  return out.filter(Boolean).join('\n') + '\n';
}

/**
 * Lines over categorical x positions (`xs` labels, evenly spaced: pass log-spaced values for a
 * log axis). `series`: [{name, color?, dashed?, points: [{median, min, max} | null]}].
 */
export function lines({ title, subtitle, xs, xLabel, yLabel, series, logY = false, width = 760, height = 380 }) {
  const left = 70;
  const right = 170;
  const top = subtitle ? 62 : 46;
  const bottom = 50;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const values = series.flatMap((s) => s.points.filter(Boolean).flatMap((p) => [p.min ?? p.median, p.max ?? p.median]));
  const out = header(width, height, title, subtitle);
  let y;
  let yt;
  if (logY) {
    const lo = Math.floor(Math.log10(Math.min(...values.filter((v) => v > 0))));
    const hi = Math.ceil(Math.log10(Math.max(...values)));
    y = (v) => top + plotH - ((Math.log10(Math.max(v, 10 ** lo)) - lo) / Math.max(1, hi - lo)) * plotH;
    yt = [];
    for (let e = lo; e <= hi; e++) yt.push(10 ** e);
  } else {
    yt = ticks(Math.max(...values) * 1.05);
    const ymax = yt[yt.length - 1];
    y = (v) => top + plotH - (v / ymax) * plotH;
  }
  const x = (i) => left + (xs.length === 1 ? plotW / 2 : (i / (xs.length - 1)) * plotW);
  for (const t of yt) {
    out.push(`<line x1="${left}" y1="${num(y(t))}" x2="${left + plotW}" y2="${num(y(t))}" stroke="#e5e7eb"/>`);
    out.push(`<text x="${left - 6}" y="${num(y(t)) + 4}" text-anchor="end" fill="#6b7280">${esc(fmt(t))}</text>`);
  }
  xs.forEach((label, i) => {
    out.push(`<line x1="${num(x(i))}" y1="${top}" x2="${num(x(i))}" y2="${top + plotH}" stroke="#f3f4f6"/>`);
    out.push(`<text x="${num(x(i))}" y="${top + plotH + 16}" text-anchor="middle" fill="#6b7280">${esc(label)}</text>`);
  });
  out.push(`<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="#9ca3af"/>`);
  out.push(`<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="#9ca3af"/>`);
  if (xLabel) out.push(`<text x="${left + plotW / 2}" y="${height - 12}" text-anchor="middle" fill="#374151">${esc(xLabel)}</text>`);
  if (yLabel) out.push(`<text transform="translate(16 ${top + plotH / 2}) rotate(-90)" text-anchor="middle" fill="#374151">${esc(yLabel)}</text>`);
  series.forEach((s, si) => {
    const color = s.color ?? COLORS[si % COLORS.length];
    const pts = s.points.map((p, i) => (p ? [x(i), y(p.median)] : null));
    const path = pts.filter(Boolean).map(([px, py], i) => `${i ? 'L' : 'M'}${num(px)},${num(py)}`).join(' ');
    out.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    s.points.forEach((p, i) => {
      if (!p) return;
      if (p.min != null && p.max != null) {
        out.push(`<line x1="${num(x(i))}" y1="${num(y(p.min))}" x2="${num(x(i))}" y2="${num(y(p.max))}" stroke="${color}" stroke-width="1.2"/>`);
      }
      out.push(`<circle cx="${num(x(i))}" cy="${num(y(p.median))}" r="3.5" fill="${color}"/>`);
    });
    const ly = top + 8 + si * 20;
    out.push(`<line x1="${left + plotW + 16}" y1="${ly}" x2="${left + plotW + 36}" y2="${ly}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(`<text x="${left + plotW + 42}" y="${ly + 4}" fill="#111827">${esc(s.name)}</text>`);
  });
  out.push(`<text x="${left + plotW + 16}" y="${top + 16 + series.length * 20}" fill="#6b7280">dot: median</text>`);
  out.push(`<text x="${left + plotW + 16}" y="${top + 32 + series.length * 20}" fill="#6b7280">whisker: min-max</text>`);
  out.push('</svg>');
  return out.filter(Boolean).join('\n') + '\n';
}
