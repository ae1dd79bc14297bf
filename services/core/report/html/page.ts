// The page shell every self-contained page shares (report.html, the sweep page): its head, the
// escaping that keeps inlined text, JSON, script and style inert, and the dates it shows.

/** The page's Content-Security-Policy: nothing may load, only the inline script and style run. */
export const HTML_REPORT_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/**
 * A self-contained page's start, up to its body: no request leaves it (HTML_REPORT_CSP, or a page's own `csp`), its
 * style inlined.
 */
export function pageHead(title: string, pageCss: string, csp: string = HTML_REPORT_CSP): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${styleForInline(pageCss)}</style>
</head>`;
}

/** Text safe inside an HTML element or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** JSON safe inside a <script> element: no "<" at all, so no "</script" and no "<!--". */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/**
 * JavaScript source safe inside a <script> element: "</script" would end the element and "<!--"
 * can put the HTML parser into its escaped state. Both only occur in strings, regular expressions
 * and comments, where "<\/" and "<\u0021" mean the same characters.
 */
export function scriptForInline(source: string): string {
  return source.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\u0021--');
}

/**
 * CSS safe inside a <style> element, which "</style" would end. Valid CSS has it only in strings,
 * where "<\/" means the same characters, and in comments, where the change is harmless.
 */
export function styleForInline(source: string): string {
  return source.replace(/<\/(style)/gi, '<\\/$1');
}

/** "2026-11-23 08:00:00 UTC" from an ISO timestamp; the text as given when it is not one. */
export function formatDate(iso: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z$/.exec(iso);
  return match ? `${match[1]} ${match[2]} UTC` : iso;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "23 Nov 08:00" from an ISO timestamp (UTC), for keys where space is short. */
export function shortDate(iso: string): string {
  const match = /^\d{4}-(\d{2})-(\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match ? `${Number(match[2])} ${MONTHS[Number(match[1]) - 1] ?? match[1]} ${match[3]}` : iso;
}

/** "12.3 s", "4 min 5 s" or "2 h 3 min" between two ISO timestamps; null when either is not one. */
export function formatDuration(fromIso: string, toIso: string): string | null {
  const ms = Date.parse(toIso) - Date.parse(fromIso);
  if (!Number.isFinite(ms) || ms < 0) return null;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.floor((ms % 60_000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
