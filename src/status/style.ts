/**
 * The status page's one stylesheet, served by the service itself (`/status/style.css`) so the page
 * needs nothing from elsewhere and a strict Content-Security-Policy (`style-src 'self'`) holds.
 * Fits screens from 1280 to 1920 wide with every column shown (text cells wrap, long values are
 * shortened: html.ts `longValue`), and stays readable on a 390-wide phone (tables scroll sideways
 * inside their card, charts scale). test/status.browser.test.ts measures both.
 */
export const STYLESHEET = `
:root { color-scheme: light; --fg: #1b1f24; --muted: #5b6470; --line: #d8dde3; --bg: #f6f7f9; --card: #fff; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { background: #14213d; color: #fff; padding: 12px 20px; display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; }
header a { color: #fff; text-decoration: none; font-weight: 600; }
header nav a { font-weight: 400; opacity: .85; margin-right: 12px; }
main { max-width: 1600px; margin: 0 auto; padding: 16px; }
h1 { font-size: 20px; margin: 8px 0 12px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; margin-bottom: 16px; }
.muted { color: var(--muted); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: break-word; }
td.wrap { min-width: 12em; }
th a { display: inline-block; }
th a { color: inherit; text-decoration: none; }
th a.sorted { text-decoration: underline; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th.num { white-space: normal; }
.chip { white-space: nowrap;  display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; }
.chip-good { background: rgb(209, 242, 219); color: rgb(20, 90, 45); }
.chip-warn { background: rgb(255, 236, 179); color: rgb(122, 79, 0); }
.chip-bad { background: rgb(255, 214, 214); color: rgb(140, 20, 20); }
.chip-alarm { background: rgb(90, 24, 110); color: rgb(255, 255, 255); }
.chip-neutral { background: rgb(228, 231, 235); color: rgb(60, 66, 75); }
.chip-level { background: rgb(225, 235, 250); color: rgb(25, 60, 120); }
form.filters { display: flex; gap: 12px; flex-wrap: wrap; align-items: end; margin-bottom: 8px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
select, button { font: inherit; padding: 4px 8px; }
.pager { display: flex; gap: 12px; align-items: center; margin-top: 8px; flex-wrap: wrap; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 16px; }
figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font-size: 11px; fill: #5b6470; }
.legend span { margin-right: 12px; font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: middle; }
ol.timeline { list-style: none; padding: 0; margin: 0; border-left: 2px solid var(--line); }
ol.timeline li { position: relative; padding: 4px 0 8px 16px; }
ol.timeline li::before { content: ""; position: absolute; left: -6px; top: 10px; width: 10px; height: 10px; border-radius: 50%; background: #14213d; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 12px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; min-width: 0; }
details.long { display: inline; }
details.long summary { display: inline; cursor: pointer; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; white-space: nowrap; }
details.long summary::-webkit-details-marker { display: none; }
details.long[open] code { display: block; }
details.long code { font-size: 12px; word-break: break-all; user-select: all; white-space: normal; }
.counts { display: flex; gap: 16px; flex-wrap: wrap; }
@media (max-width: 600px) { main { padding: 8px; } section { padding: 8px; } .charts { grid-template-columns: 1fr; } }
`
