#include "exporters/report_html.h"

#include "common/sanitize.h"

namespace causeway {
namespace {

// Kept small and print-friendly: system fonts, no web fonts (nothing to fetch offline).
// Colours of the swimlanes and histograms are classes (report_svg.h) so the legend and the
// drawing cannot disagree.
constexpr std::string_view kCss = R"css(
:root{--fg:#1d232a;--muted:#5b6670;--line:#d5dbe0;--bg:#fff;--panel:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1240px;padding:16px 20px 40px}
h1{font-size:22px;margin:4px 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:10px 14px}
.meta dt{color:var(--muted)}.meta dd{margin:0}
section.chain{border:1px solid var(--line);border-radius:6px;padding:10px 14px 12px;margin:14px 0;background:#fff}
section.chain.sev-HIGH{border-left:6px solid #c62828}section.chain.sev-MEDIUM{border-left:6px solid #ef6c00}section.chain.sev-LOW{border-left:6px solid #9e9e9e}
.sev{display:inline-block;font-size:12px;font-weight:700;padding:1px 7px;border-radius:10px;color:#fff;background:#9e9e9e;margin-right:6px;vertical-align:2px}
.sev.HIGH{background:#c62828}.sev.MEDIUM{background:#ef6c00}
.summary{font-size:15px;margin:4px 0 8px}
.kv{display:grid;grid-template-columns:max-content 1fr;gap:3px 12px;margin:6px 0}.kv dt{color:var(--muted);font-weight:600}.kv dd{margin:0}
.culprit{font-weight:700;color:#b71c1c}
.fix{background:#e8f5e9;border:1px solid #a5d6a7;border-radius:4px;padding:6px 10px;margin:8px 0}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12.5px}
ul.evidence{margin:4px 0 4px 18px;padding:0}
details{margin:6px 0}summary{cursor:pointer;color:var(--muted)}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border-bottom:1px solid var(--line);padding:3px 10px;text-align:left;vertical-align:top}
th{background:var(--panel)}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.straggler td{background:#ffebee;font-weight:700}
.note{color:var(--muted);font-size:12.5px}
.opgrid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:12px}
svg.histogram{width:100%}
figure{margin:8px 0}figure.op{border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:0}figcaption{font-size:13px;margin-bottom:4px}
svg{display:block;max-width:100%;height:auto}
svg text{font-family:system-ui,"DejaVu Sans",sans-serif;font-size:11px;fill:#1d232a}
svg text.lane{font-weight:600}svg text.in{fill:#fff;font-weight:600}svg text.ax{fill:#5b6670;font-size:10px}
svg .grid{stroke:#e3e7eb;stroke-width:1}svg .axis{stroke:#8a96a0;stroke-width:1}
svg .on_cpu{fill:#2e7d32}svg .runnable{fill:#ef6c00}svg .sleeping{fill:#cfd8dc}svg .blocked{fill:#6a1b9a}
svg .culprit{fill:#c62828}svg .other{fill:#90a4ae}svg .idle{fill:#f1f3f5;stroke:#d5dbe0}
svg .call{fill:#64b5f6}svg .slow_call{fill:#0d47a1}svg .io{fill:#00897b}svg .waiting_token{fill:#ef6c00}svg .streaming{fill:#7986cb}svg .unknown{fill:#eceff1}
svg .focus{fill:#fff59d;fill-opacity:.45;stroke:#f9a825;stroke-dasharray:4 3}
svg .bar{fill:#90a4ae}svg .unexplained{fill:#546e7a}svg .tail{fill:#78909c}
svg .p50{stroke:#1565c0;stroke-width:2}svg .p99{stroke:#c62828;stroke-width:2;stroke-dasharray:5 3}
svg .c0{fill:#c62828}svg .c1{fill:#6a1b9a}svg .c2{fill:#ef6c00}svg .c3{fill:#00897b}svg .c4{fill:#f9a825}svg .c5{fill:#5d4037}svg .c6{fill:#ad1457}svg .c7{fill:#283593}svg .c8{fill:#827717}svg .c9{fill:#0277bd}svg .c10{fill:#ff8a65}svg .c11{fill:#4e342e}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:2px 0 4px}
i.sw{display:inline-block;width:10px;height:10px;border-radius:2px;vertical-align:-1px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}
i.on_cpu{background:#2e7d32}i.runnable{background:#ef6c00}i.sleeping{background:#cfd8dc}i.blocked{background:#6a1b9a}
i.culprit{background:#c62828}i.other{background:#90a4ae}i.idle{background:#f1f3f5;border:1px solid #d5dbe0}
i.focus{background:#fff59d;border:1px dashed #f9a825}i.unknown{background:#eceff1;border:1px solid #d5dbe0}i.call{background:#64b5f6}i.slow_call{background:#0d47a1}i.io{background:#00897b}i.waiting_token{background:#ef6c00}i.streaming{background:#7986cb}i.bar{background:#90a4ae}i.unexplained{background:#546e7a}i.tail{background:#78909c}
i.c0{background:#c62828}i.c1{background:#6a1b9a}i.c2{background:#ef6c00}i.c3{background:#00897b}i.c4{background:#f9a825}i.c5{background:#5d4037}i.c6{background:#ad1457}i.c7{background:#283593}i.c8{background:#827717}i.c9{background:#0277bd}i.c10{background:#ff8a65}i.c11{background:#4e342e}
footer{margin-top:30px;color:var(--muted);font-size:12px}
)css";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string html_text(std::string_view untrusted, size_t max_bytes) {
  return html_escape(sanitize_untrusted(untrusted, max_bytes));
}

std::string html_page(std::string_view title, std::string_view body) {
  std::string out;
  out.reserve(body.size() + kCss.size() + 512);
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // default-src 'none': no script, font, image, frame or connection from anywhere; the inline
  // stylesheet is the only thing the page may use.
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  out += html_escape(title);
  out += "</title>\n<style>";
  out += kCss;
  out += "</style>\n</head>\n<body>\n";
  out += body;
  out += "\n</body>\n</html>\n";
  return out;
}

}  // namespace causeway
