/* EduFair report viewer: one page, no dependencies, works from file://.
   The report's numbers are inline (EF.data); per-cell differences (viewer/c/<n>.js) and transcripts
   (viewer/t/<tutor>/<task>/<bucket>.js) are loaded with <script> elements when a view needs them. */
(function () {
  "use strict";
  var D = EF.data;
  var app = document.getElementById("app");
  var crumbs = document.getElementById("crumbs");
  var statusEl = document.getElementById("status");

  // ---- data received from the on-demand files -----------------------------------------------
  var cells = {}, chunks = {}, questions = null, loading = {};
  EF.cell = function (n, data) { cells[n] = data; };
  EF.d = function (key, dialogue) { (chunks[key] = chunks[key] || []).push(dialogue); };
  EF.questions = function (q) { questions = q; };

  function load(src) {
    if (!loading[src]) {
      loading[src] = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = src; s.charset = "utf-8"; s.async = true;
        s.onload = function () { resolve(); };
        s.onerror = function () { delete loading[src]; reject(new Error("could not load " + src)); };
        document.head.appendChild(s);
      });
    }
    return loading[src];
  }
  function loadCell(n) { return load("viewer/c/" + n + ".js").then(function () { return cells[n]; }); }
  function loadQuestions() { return load("viewer/questions.js").then(function () { return questions; }); }
  function chunkKey(ti, task, bucket) { return ti + "/" + task + "/" + bucket; }
  function loadChunk(ti, task, bucket) {
    return load("viewer/t/" + ti + "/" + task + "/" + bucket + ".js").then(function () { return chunks[chunkKey(ti, task, bucket)] || []; });
  }

  // ---- helpers -------------------------------------------------------------------------------
  function el(tag, props) {
    var e = document.createElement(tag);
    props = props || {};
    Object.keys(props).forEach(function (k) {
      var v = props[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "text") e.textContent = v;
      else if (k === "cls") e.className = v;
      else if (k === "on") Object.keys(v).forEach(function (ev) { e.addEventListener(ev, v[ev]); });
      else if (k === "style") e.setAttribute("style", v);
      else e.setAttribute(k, v === true ? "" : v);
    });
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(parent, c); }); return; }
    parent.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function isNum(x) { return typeof x === "number" && isFinite(x); }
  function fmt(x, d) { return isNum(x) ? x.toFixed(d === undefined ? 2 : d) : "—"; }
  function signed(x, d) { return isNum(x) ? (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(d === undefined ? 2 : d) : "—"; }
  function pval(x) { return !isNum(x) ? "—" : x < 0.001 ? "< 0.001" : x.toFixed(3); }
  function int(x) { return isNum(x) ? Math.round(x).toLocaleString("en-US") : "—"; }
  function table(cols, rows, opts) {
    opts = opts || {};
    var t = el("table", {cls: "data"});
    var tr = el("tr");
    cols.forEach(function (c, j) { tr.appendChild(el("th", {cls: (opts.num || [])[j] ? "num" : null, text: c})); });
    t.appendChild(el("thead", {}, tr));
    var body = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr", {cls: opts.click ? "clickable" : null});
      r.forEach(function (v, j) {
        var td = el("td", {cls: (opts.num || [])[j] ? "num" : null});
        add(td, v instanceof Node ? v : v === null || v === undefined ? "" : typeof v === "number" ? (Number.isInteger(v) ? int(v) : fmt(v, 3)) : String(v));
        row.appendChild(td);
      });
      if (opts.click) { var f = opts.click(r); if (f) row.addEventListener("click", f); }
      body.appendChild(row);
    });
    t.appendChild(body);
    return t;
  }
  function rowsOf(tab) { // {cols, rows} -> list of objects
    if (!tab) return [];
    return tab.rows.map(function (r) { var o = {}; tab.cols.forEach(function (c, j) { o[c] = r[j]; }); return o; });
  }
  function setCrumbs(parts) {
    clear(crumbs);
    parts.forEach(function (p, i) {
      if (i) crumbs.appendChild(el("span", {cls: "sep", text: "›"}));
      crumbs.appendChild(p[1] ? el("a", {href: p[1], text: p[0]}) : el("span", {text: p[0]}));
    });
  }
  function ready(view) { document.body.setAttribute("data-view", view); document.body.setAttribute("data-ready", "1"); EF.readyAt = performance.now(); statusEl.textContent = ""; }
  function busy(text) { document.body.setAttribute("data-ready", "0"); statusEl.textContent = text || "loading…"; }
  function fail(err) {
    statusEl.textContent = "";
    app.appendChild(el("p", {cls: "error", text: String(err && err.message || err)}));
    document.body.setAttribute("data-ready", "1");
  }

  // ---- vocabulary ----------------------------------------------------------------------------
  // metric and kind names: the metric catalogue's (edufair_metrics/catalogue.py, through the page's JSON)
  var METRIC_NAMES = {}; D.metrics.forEach(function (m) { METRIC_NAMES[m.name] = [m.label, m.display]; });
  var KIND_NAMES = {}, KIND_SHORT = {}; D.kinds.forEach(function (k) { KIND_NAMES[k[0]] = k[2]; KIND_SHORT[k[0]] = k[1]; });
  var VERDICT_TEXT = {
    flag: ["flag", "the test survives the multiplicity correction over the family's units (FDR)"],
    unconfirmed: ["unconfirmed", "flagged per dialogue, but the turn-level test over the judged turns does not confirm it (a length effect?)"],
    inconclusive: ["inconclusive", "the data neither show nor rule out a difference"],
    certify: ["certify", "the 90% interval of r lies inside ± the equivalence margin (TOST): shown to be negligible"],
    insufficient: ["insufficient", "too few paired questions for a test"],
    none: ["no evidence", "no FDR violation with enough pairs (not a proof of fairness)"]
  };
  var JUDGE_CHIP = {student_mistake_prev_turn: "student erred", correction_tone: "tone", mistake_recognize: "recognize",
    answer_leakage: "leak", scaffolding_guidance: "scaffold", actionability: "action"};
  // the conditions found in the data, in the presentation order (protocol/data/presentation.yaml)
  var CONDITION_ORDER = Object.keys(D.conditions).sort(function (x, y) { return D.conditions[x].order - D.conditions[y].order || (x < y ? -1 : x > y ? 1 : 0); });
  var EXTENSION_CONDITIONS = D.extension_conditions || [];  // presentation family "own"
  var DOMAIN_ORDER = ["mathematics", "physics", "chemistry"];
  var metricsByName = {}; D.metrics.forEach(function (m, i) { m.index = i; metricsByName[m.name] = m; });
  function mShort(m) { return (METRIC_NAMES[m] || [m])[0]; }
  function mLong(m) { return (METRIC_NAMES[m] || [m, m])[1]; }
  function domainLabel(d) { return D.domain_labels[d] || d; }
  function cap(s) { return s ? s.charAt(0).toUpperCase() + s.slice(1) : s; }
  function prettyLevel(lv) {
    var m = /^s_(female|male)_t_(female|male)$/.exec(lv);
    if (m) return "student " + m[1] + ", tutor told " + m[2];
    var rep = lv.split("~replicate");
    return rep[0].replace(/_/g, " ") + (rep.length > 1 ? " (replicate " + rep[1] + ")" : "");
  }
  function sideLabel(s) { return s.split("+").map(prettyLevel).join(" + "); }
  function verdictChip(v) { var t = VERDICT_TEXT[v] || [v, v]; return el("span", {cls: "chip v-" + v, title: t[1], text: t[0]}); }

  // ---- the grid ------------------------------------------------------------------------------
  var G = D.grid.rows.map(function (r, i) { var o = {id: i}; D.grid.cols.forEach(function (c, j) { o[c] = r[j]; }); return o; });
  var tutorOf = {}; D.tutors.forEach(function (t) { tutorOf[t.label] = t; });
  function order(list, value) { var i = list.indexOf(value); return i < 0 ? list.length : i; }
  function contrastOrder(cond, name) {
    var cs = (D.conditions[cond] || {}).contrasts || [];
    for (var i = 0; i < cs.length; i++) if (cs[i].name === name) return i;
    return cs.length;
  }
  function rowKey(r) { return [r.domain, r.condition, r.contrast, r.pair].join("|"); }
  function siblings(row) { // the same contrast pair, every metric
    return G.filter(function (g) { return g.tutor === row.tutor && rowKey(g) === rowKey(row); });
  }

  var state = {tutor: D.tutors.length ? D.tutors[0].label : null, all: false};

  function viewOverview() {
    setCrumbs([["Overview"]]);
    clear(app);
    var nDialogues = D.tutors.reduce(function (s, t) { return s + t.dialogues; }, 0);
    app.appendChild(el("h1", {text: "Fairness audit of " + D.tutors.length + " tutor" + (D.tutors.length === 1 ? "" : "s")}));
    bannerBoxes().forEach(function (b) { app.appendChild(b); });
    app.appendChild(el("p", {cls: "muted small"},
      int(nDialogues) + " dialogues · created " + D.created + " · EduFair " + (D.versions.edufair || "?") +
      " · protocol " + (D.versions.protocol || "?") + " · B = " + D.params.n_boot + ", min pairs = " + D.params.min_pairs +
      ", SES summary " + D.params.ses_summary + ", FDR " + D.params.fdr_method + " · ",
      el("a", {href: "#failures", text: "failures and lost pairs"}), " · ", el("a", {href: "#glossary", id: "glossary-link", text: "glossary of the terms"}),
      " · files: summary.md, grid.csv, units.csv, glossary.md"));
    if (D.run_card && D.run_card.rows.length) {  // the run card: models, decoding, T_max, versions (summary.md's too)
      var card = el("details", {cls: "run-card", id: "run-card"}, el("summary", {text: "Run card: models, decoding, T_max, protocol, seeds, versions"}));
      card.appendChild(table(D.run_card.cols, D.run_card.rows));
      app.appendChild(card);
    }
    var top = el("div", {cls: "toprow"}, headlineCards());
    if (D.leaderboard && D.leaderboard.rows.length) top.appendChild(leaderboardSection());
    app.appendChild(top);
    app.appendChild(flaggedSection());
    app.appendChild(studentSection());
    app.appendChild(gridSection());
    renderGrid();
    app.appendChild(costSection());
    ready("overview");
  }

  function verdictChips(counts) {
    var box = el("div", {cls: "vkinds"});
    Object.keys(KIND_NAMES).forEach(function (kind) {
      var c = counts[kind]; if (!c) return;
      var line = el("div", {cls: "chips"}, el("span", {cls: "small muted", style: "min-width:44px", text: KIND_SHORT[kind] || kind}));
      D.verdicts.forEach(function (v) { if (c[v]) line.appendChild(el("span", {cls: "chip v-" + v, title: (VERDICT_TEXT[v] || [])[1]}, c[v] + " " + (VERDICT_TEXT[v] || [v])[0])); });
      box.appendChild(line);
    });
    return box;
  }

  function headlineTable() { // many tutors: one row each
    var heads = {}; rowsOf(D.headline).forEach(function (h) { heads[h.tutor] = h; });
    var rows = D.tutors.map(function (t) {
      var h = heads[t.label] || {};
      var name = el("a", {href: "#", text: t.label, on: {click: function (ev) { ev.preventDefault(); state.tutor = t.label; renderGrid(); document.getElementById("grid").scrollIntoView(); }}});
      return [name, h["ped unbiased |r̄|"], h["ped |r̄|"], (isNum(h["ped FDR viol."]) ? h["ped FDR viol."] : "—") + " / " + (isNum(h["ped units"]) ? h["ped units"] : "—"),
        verdictChips(D.verdict_counts[t.label] || {}), t.dialogues, costLine(t.label, false)];
    });
    var wrap = el("div", {id: "headline", cls: "headline-table"}, el("h2", {style: "margin-top:0;font-size:15px", text: "Headline per tutor"}));
    wrap.appendChild(table(["tutor", "ped unbiased |r̄|", "ped |r̄|", "ped FDR viol. / units", "headline units by verdict", "dialogues", "cost"], rows,
      {num: [0, 1, 1, 1, 0, 1, 0]}));
    return wrap;
  }

  function headlineCards() {
    if (D.tutors.length > 2) return headlineTable();
    var wrap = el("div", {cls: "cards", id: "headline"});
    var heads = {}; rowsOf(D.headline).forEach(function (h) { heads[h.tutor] = h; });
    D.tutors.forEach(function (t) {
      var h = heads[t.label] || {};
      var counts = D.verdict_counts[t.label] || {};
      var card = el("div", {cls: "card tutor-card"}, el("h3", {text: t.label}));
      card.appendChild(el("div", {cls: "kpis"},
        kpi(fmt(h["ped unbiased |r̄|"], 3), "ped unbiased |r̄|", "the leaderboard's ranking quantity: the signed root of the mean of (r² − V0)/(1 − V0) over the pedagogical headline units (≈ 0 without bias, ≈ the true |r| with bias)"),
        kpi(fmt(h["ped |r̄|"], 3), "ped |r̄| (paper)", "the paper's mean |r| over the pedagogical headline units"),
        kpi((isNum(h["ped FDR viol."]) ? h["ped FDR viol."] : "—") + " / " + (isNum(h["ped units"]) ? h["ped units"] : "—"), "ped FDR viol. / units",
          "pedagogical headline units with an FDR violation, of the sufficient units"),
        kpi(int(t.dialogues), "dialogues", null)));
      var vt = el("table", {cls: "vcounts"});
      Object.keys(KIND_NAMES).forEach(function (kind) {
        var c = counts[kind]; if (!c) return;
        var chips = el("td", {cls: "chips"});
        D.verdicts.forEach(function (v) { if (c[v]) chips.appendChild(el("span", {cls: "chip v-" + v, title: (VERDICT_TEXT[v] || [])[1]}, c[v] + " " + (VERDICT_TEXT[v] || [v])[0])); });
        vt.appendChild(el("tr", {}, el("td", {cls: "small muted", text: KIND_NAMES[kind]}), chips));
      });
      card.appendChild(el("div", {cls: "small muted", text: "Headline units by verdict:"}));
      card.appendChild(vt);
      card.appendChild(costLine(t.label));
      var pkg = D.package[t.label];
      if (pkg) card.appendChild(el("div", {cls: "small muted"}, "Run with EduFair " + (pkg.version || "?") + "; tasks found " +
        ((pkg.lm_eval_reads || {})["lm_eval.tasks"] ? "through the lm_eval.tasks entry point" : "through --include_path (this lm-eval reads no plugin entry point)")));
      var link = el("a", {href: "#", text: "show its grid ↓", on: {click: function (ev) { ev.preventDefault(); state.tutor = t.label; renderGrid(); document.getElementById("grid").scrollIntoView(); }}});
      card.appendChild(el("div", {cls: "small", style: "margin-top:6px"}, link));
      wrap.appendChild(card);
    });
    return wrap;
  }
  function describe(g) { return mLong(g.metric) + " · " + g.contrast + " (" + sideLabel(g.a) + " − " + sideLabel(g.b) + ") · " + domainLabel(g.domain) + " · " + cap(g.condition); }
  function flaggedSection() {
    var sec = el("section", {id: "flagged"});
    var hot = G.filter(function (g) { return g.verdict === "flag" || g.verdict === "unconfirmed"; });
    var kindRank = {pedagogical: 1, detector: 2, conversation: 3};
    hot.sort(function (x, y) { return (y.headline - x.headline) || (kindRank[x.metric_kind] || 4) - (kindRank[y.metric_kind] || 4) || Math.abs(y.r) - Math.abs(x.r) || x.id - y.id; });
    sec.appendChild(el("h2", {text: hot.length ? "Flagged: " + hot.length + " contrast" + (hot.length === 1 ? "" : "s") + " × metric" : "Nothing flagged"}));
    if (!hot.length) {
      sec.appendChild(el("p", {cls: "muted", text: "No contrast has an FDR violation. That is not a proof of fairness: see each tutor's power line in summary.md and the insufficient cells below."}));
      return sec;
    }
    var list = el("div", {cls: "flag-list"});
    var limit = 6;
    hot.forEach(function (g, k) {
      var who = g.r > 0 ? sideLabel(g.a) : sideLabel(g.b);
      list.appendChild(el("a", {cls: "flag-item", href: "#cell/" + g.id, "data-row": g.id},
        verdictChip(g.verdict), el("span", {cls: "fi-what", text: describe(g)}),
        el("span", {cls: "fi-why", text: (D.tutors.length > 1 ? g.tutor + ": " : "") + cap(who) + " received more (r = " + signed(g.r) + " [" + fmt(g.ci_low) + ", " + fmt(g.ci_high) + "], n = " + g.n_pairs + ", q " + (g.q_value < 0.001 ? "" : "= ") + pval(g.q_value) + ")" + (g.headline ? "" : " · not a headline unit")}),
        g.caveats ? el("span", {cls: "fi-caveat", title: "beside the verdict: the verdict itself is unchanged", text: "⚠ " + g.caveats}) : null));
      if (k >= limit) list.lastChild.style.display = "none";
    });
    sec.appendChild(list);
    if (hot.length > limit) {
      var more = el("button", {cls: "btn small", text: "show all " + hot.length + " (pedagogical first; the red cells of the grid below)"});
      more.addEventListener("click", function () { Array.prototype.forEach.call(list.children, function (c) { c.style.display = ""; }); more.remove(); });
      sec.appendChild(more);
    }
    return sec;
  }

  function inline(text) { // a banner line's marks: **bold** and `code`, the rest as text
    var out = [];
    text.split(/(\*\*[^*]+\*\*|`[^`]+`)/).forEach(function (part) {
      if (!part) return;
      if (part.slice(0, 2) === "**") out.push(el("b", {text: part.slice(2, -2)}));
      else if (part[0] === "`") out.push(el("code", {text: part.slice(1, -1)}));
      else out.push(part);
    });
    return out;
  }
  function bannerBox(b) { // one banner of report/sections/banners.py, from the Markdown summary.md prints
    var box = el("div", {cls: "banner banner-" + b.level, id: "banner-" + b.key, "data-key": b.key});
    var lines = b.markdown.split("\n").map(function (ln) { return ln.replace(/^> ?/, ""); });
    var list = null;
    lines.forEach(function (ln) {
      if (/^- /.test(ln)) {
        if (!list) { list = el("ul"); box.appendChild(list); }
        list.appendChild(el("li", {}, inline(ln.slice(2))));
      } else {
        list = null;
        if (ln.trim()) box.appendChild(el("p", {}, inline(ln)));
      }
    });
    return box;
  }
  function bannerBoxes() { return (D.banners || []).map(bannerBox); }

  function studentSection() { // the student-side monitor: did the student behave the same across levels?
    var sec = el("section", {id: "student"}, el("h2", {text: "Student-side monitor (student drift)"}));
    if (!D.student_units) { sec.appendChild(el("p", {cls: "muted", text: "No student metric: the records store no transcripts."})); return sec; }
    var S = rowsOf(D.student_units);
    var hot = S.filter(function (u) { return u.verdict === "flag"; });
    var drifted = G.filter(function (g) { return g.student_drift && (g.verdict === "flag" || g.verdict === "unconfirmed"); });
    sec.appendChild(el("p", {cls: "small"}, hot.length + " of " + S.length + " student unit" + (S.length === 1 ? "" : "s") + " flagged; " +
      drifted.length + " flagged tutor-side contrast" + (drifted.length === 1 ? "" : "s") + " × metric marked \"student drift\". " +
      "In Explicit and Implicit only the tutor sees the cue: a student that behaves differently was moved by the tutor (a mediator) or by the cue leaking into the dialogue. " +
      "Where the student is told its gender (Opposite's Correct, Wrong, student effect) a difference is part of the design. Student metrics never count toward the headline, leaderboard or CI gate."));
    if (hot.length) {
      sec.appendChild(table(["tutor", "domain", "condition", "contrast", "student metric", "|r̄|", "q", "n"], hot.map(function (u) {
        return [u.tutor, domainLabel(u.domain), cap(u.condition), u.contrast, mLong(u.metric), u.abs_r, u.q_unit, u.n_pairs_min];
      }), {num: [0, 0, 0, 0, 0, 1, 1, 1]}));
    }
    return sec;
  }

  function lossText(g) { // pair accounting of one row
    if (!isNum(g.pairs_all)) return null;
    var causes = [["failed", "failed dialogue"], ["missing_label", "missing judge label"], ["no_value", "no applicable turn / no value"]];
    var parts = causes.filter(function (c) { return g["lost_a_" + c[0]] || g["lost_b_" + c[0]]; }).map(function (c) {
      return c[1] + ": " + int(g["lost_a_" + c[0]]) + " (" + sideLabel(g.a) + ") vs " + int(g["lost_b_" + c[0]]) + " (" + sideLabel(g.b) + ")";
    });
    return "Pairs kept " + int(g.pairs_kept) + " of " + int(g.pairs_all) + " (questions with both sides run). " +
      (parts.length ? "Lost: " + parts.join("; ") + ". Exact McNemar, Bonferroni over the causes: p " + (g.loss_p < 0.001 ? "" : "= ") + pval(g.loss_p) +
        (g.differential_loss ? " — differential loss: the remaining pairs are a selected set." : " — no differential loss.") : "None lost.");
  }

  function kpi(v, k, title) { return el("div", {cls: "kpi", title: title}, el("div", {cls: "v", text: v}), el("div", {cls: "k", text: k})); }

  function costLine(tutor, prefix) {
    var rows = rowsOf(D.cost).filter(function (r) { return r.tutor === tutor; });
    var line = el("div", {cls: "small muted cost-line"});
    if (!rows.length) return line;
    var parts = rows.map(function (r) {
      if (r.role === "(all)") return "not recorded";
      var tok = isNum(r.prompt_tokens) ? int(r.prompt_tokens + r.completion_tokens) + " tokens" : "tokens missing";
      var wall = isNum(r.wall_s) ? ", " + fmt(r.wall_s, 0) + " s" : "";
      return r.role + ": " + tok + wall;
    });
    line.appendChild(document.createTextNode((prefix === false ? "" : "Cost · ") + parts.join(" · ")));
    return line;
  }

  function leaderboardSection() { // the columns that decide (report/leaderboard.py: DECIDING); every column: leaderboard.csv
    var L = D.leaderboard;
    var sec = el("section", {id: "leaderboard"}, el("h2", {text: "Leaderboard (ranked by " + (D.rank_column || L.cols[2]) + ", lower = fairer)"}));
    sec.appendChild(table(L.cols, L.rows, {num: L.cols.map(function (c, j) { return L.rows.some(function (r) { return typeof r[j] === "number"; }); })}));
    sec.appendChild(el("p", {cls: "small muted"}, "Rank 95% interval: from bootstrap resamples of the questions, drawn jointly for all tutors; tutors whose intervals overlap are tied (the data do not order them). Every column (per kind, per condition, per metric): leaderboard.csv; terms: ",
      el("a", {href: "#glossary", text: "glossary"}), "."));
    return sec;
  }

  function costSection() {
    var sec = el("section", {id: "cost"}, el("h2", {text: "Cost per tutor and role"}));
    var rows = rowsOf(D.cost);
    if (!rows.length) { sec.appendChild(el("p", {cls: "muted", text: "No call counts."})); return sec; }
    sec.appendChild(table(["tutor", "role", "requests", "calls", "prompt tokens", "completion tokens", "tokens from", "wall time", "note"],
      rows.map(function (r) {
        return [r.tutor, r.role, r.requests, r.calls, isNum(r.prompt_tokens) ? r.prompt_tokens : "—", isNum(r.completion_tokens) ? r.completion_tokens : "—",
          r.token_source ? r.token_source + " (" + int(r.token_calls) + " calls)" : "—", isNum(r.wall_s) ? fmt(r.wall_s, 1) + " s" : "—", r.note || ""];
      }), {num: [0, 0, 1, 1, 1, 1, 0, 1, 0]}));
    sec.appendChild(el("p", {cls: "small muted", text: "Tokens as the backends report them (usage) or as the model's tokenizer counts them (hf, vLLM); cache hits and coalesced requests cost nothing. Wall time: seconds the role's calls were in flight."}));
    return sec;
  }

  function gridSection() {
    var sec = el("section", {id: "grid"});
    sec.appendChild(el("h2", {text: "Verdict grid: every contrast × metric"}));
    sec.appendChild(el("div", {id: "grid-controls", cls: "controls"}));
    sec.appendChild(legend());
    sec.appendChild(el("div", {id: "grid-body", cls: "grid-wrap"}));
    return sec;
  }
  function legend() {
    var lg = el("div", {cls: "legend"});
    var present = {}; G.forEach(function (g) { present[g.verdict] = true; });
    D.verdicts.forEach(function (v) { if (present[v]) lg.appendChild(el("span", {}, verdictChip(v), " " + (VERDICT_TEXT[v] || ["", ""])[1])); });
    lg.appendChild(el("span", {}, el("b", {style: "color:var(--flag)", text: "•"}), " the paper's rule (95% CI excludes 0) without an FDR violation"));
    lg.appendChild(el("span", {text: "Number: signed r (> 0: the first group received more); bar: |r|, "},
      el("span", {style: "color:var(--pos)", text: "■ first group more"}), " ", el("span", {style: "color:var(--neg)", text: "■ second group more"}),
      "; n: paired questions. Click a cell for its evidence."));
    return lg;
  }

  function renderGrid() {
    var controls = document.getElementById("grid-controls"), body = document.getElementById("grid-body");
    if (!controls || !body) return;
    clear(controls); clear(body);
    if (D.tutors.length > 1) {
      controls.appendChild(el("span", {cls: "small muted", text: "Tutor:"}));
      D.tutors.forEach(function (t) {
        controls.appendChild(el("button", {cls: t.label === state.tutor ? "on" : null, text: t.label,
          on: {click: function () { state.tutor = t.label; renderGrid(); }}}));
      });
    }
    var cb = el("input", {type: "checkbox", id: "all-rows"}); cb.checked = state.all;
    cb.addEventListener("change", function () { state.all = cb.checked; renderGrid(); });
    controls.appendChild(el("label", {cls: "small"}, cb, " also non-headline contrasts (SES pairwise, Opposite decomposition)"));

    // an extension condition's contrasts are never the paper's headline; they are shown like headline ones
    var rows = G.filter(function (g) { return g.tutor === state.tutor && (state.all || g.headline || EXTENSION_CONDITIONS.indexOf(g.condition) >= 0); });
    var metrics = D.metrics.map(function (m) { return m.name; }).filter(function (m) { return rows.some(function (g) { return g.metric === m; }); });
    var byKey = {}, keys = [];
    rows.forEach(function (g) { var k = rowKey(g); if (!byKey[k]) { byKey[k] = {}; keys.push(g); } byKey[k][g.metric] = g; });
    CONDITION_ORDER.forEach(function (cond) {
      var mine = keys.filter(function (g) { return g.condition === cond; });
      if (!mine.length) return;
      mine.sort(function (x, y) {
        return order(DOMAIN_ORDER, x.domain) - order(DOMAIN_ORDER, y.domain) || x.domain.localeCompare(y.domain) ||
          contrastOrder(cond, x.contrast) - contrastOrder(cond, y.contrast) || x.pair.localeCompare(y.pair);
      });
      body.appendChild(el("h3", {text: D.conditions[cond].title || cap(cond)}));
      var t = el("table", {cls: "vgrid", "data-condition": cond});
      var kinds = [], span = {};
      metrics.forEach(function (m) { var k = metricsByName[m].kind; if (!span[k]) { span[k] = 0; kinds.push(k); } span[k]++; });
      var h1 = el("tr", {}, el("th", {text: ""}));
      kinds.forEach(function (k) { h1.appendChild(el("th", {cls: "group", colspan: span[k], text: KIND_NAMES[k] || k})); });
      var h2 = el("tr", {}, el("th", {cls: "rowhead", text: "contrast: first − second group"}));
      metrics.forEach(function (m) { h2.appendChild(el("th", {title: mLong(m), text: mShort(m)})); });
      t.appendChild(el("thead", {}, h1, h2));
      var tb = el("tbody"), lastDomain = null;
      mine.forEach(function (g) {
        if (g.domain !== lastDomain) {
          lastDomain = g.domain;
          tb.appendChild(el("tr", {cls: "domain-sep"}, el("th", {colspan: metrics.length + 1, text: domainLabel(g.domain)})));
        }
        var tr = el("tr", {cls: g.headline ? null : "nonheadline"});
        var pairText = g.kind === "binary" || g.kind === "multilevel" || g.kind === "pairs" ? sideLabel(g.a) + " − " + sideLabel(g.b) : sideLabel(g.a) + "  −  " + sideLabel(g.b);
        tr.appendChild(el("th", {cls: "rowhead"}, g.contrast.replace(" (Friedman)", " pairwise") + " ", el("span", {cls: "pair", text: pairText})));
        metrics.forEach(function (m) { tr.appendChild(gridCell(byKey[rowKey(g)][m])); });
        tb.appendChild(tr);
      });
      t.appendChild(tb);
      body.appendChild(t);
    });
    if (!rows.length) body.appendChild(el("p", {cls: "muted", text: "No contrasts for this tutor."}));
  }

  function gridCell(g) {
    if (!g) return el("td", {cls: "cell empty"});
    var td = el("td", {cls: "cell v-" + g.verdict, "data-row": g.id, "data-verdict": g.verdict,
      title: mLong(g.metric) + " · " + sideLabel(g.a) + " − " + sideLabel(g.b) + "\nr = " + signed(g.r) + " [" + fmt(g.ci_low) + ", " + fmt(g.ci_high) + "], n = " + g.n_pairs +
        ", noise floor " + fmt(g.null_abs_r) + ", q " + (g.q_value < 0.001 ? "" : "= ") + pval(g.q_value) + "\n" + (VERDICT_TEXT[g.verdict] || [g.verdict, ""]).join(": "),
      on: {click: function () { location.hash = "#cell/" + g.id; }}});
    if (g.sufficient) {
      td.appendChild(el("span", {cls: "r", text: signed(g.r)}));
      var w = Math.min(1, Math.abs(g.r || 0) / 0.5) * 50;
      td.appendChild(el("span", {cls: "track"}, el("span", {cls: "fill", style: "width:" + w.toFixed(1) + "%;" + (g.r >= 0 ? "left:50%;background:var(--pos)" : "right:50%;background:var(--neg)")})));
      if (g.violation && !g.violation_fdr && g.verdict !== "flag") td.appendChild(el("span", {cls: "raw", title: "the paper's rule: 95% CI excludes 0 (not an FDR violation)", text: "●"}));
      if (g.caveats) td.appendChild(el("span", {cls: "caveat-mark", title: g.caveats, text: (g.differential_loss && (g.verdict === "flag" || g.verdict === "unconfirmed") ? "‡" : "") + (g.student_drift ? "§" : "")}));
    } else {
      td.appendChild(el("span", {cls: "r", text: "—"}));
    }
    td.appendChild(el("span", {cls: "n", text: "n=" + g.n_pairs}));
    return td;
  }

  // ---- a cell: its paired differences ----------------------------------------------------------
  function verdictBanner(g) {
    var t = VERDICT_TEXT[g.verdict] || [g.verdict, ""];
    var b = el("div", {cls: "verdict-banner v-" + g.verdict, id: "verdict"}, el("b", {text: cap(t[0])}), " — " + t[1] + ". ");
    if (g.sufficient) {
      var dir = g.r > 0 ? sideLabel(g.a) : sideLabel(g.b);
      b.appendChild(document.createTextNode(Math.abs(g.r) < 1e-9 ? "No direction." :
        cap(dir) + " received more " + mLong(g.metric).toLowerCase() + " (r = " + signed(g.r) + ", 95% CI " + fmt(g.ci_low) + " to " + fmt(g.ci_high) +
        (g.ci_low > 0 || g.ci_high < 0 ? ", excludes 0" : ", includes 0") + "; q " + (g.q_value < 0.001 ? "" : "= ") + pval(g.q_value) + ")."));
    } else {
      b.appendChild(document.createTextNode("Only " + g.n_pairs + " paired questions; a test needs " + D.params.min_pairs + "."));
    }
    return b;
  }

  function effectSvg(g) {
    var W = 460, H = 70, x = function (v) { return 20 + (Math.max(-1, Math.min(1, v)) + 1) / 2 * (W - 40); };
    var ns = "http://www.w3.org/2000/svg";
    function s(tag, attrs, text) { var e = document.createElementNS(ns, tag); Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); }); if (text !== undefined) e.textContent = text; return e; }
    var svg = s("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "r with its confidence interval and noise floor"});
    if (isNum(g.null_abs_r)) svg.appendChild(s("rect", {x: x(-g.null_abs_r), y: 14, width: x(g.null_abs_r) - x(-g.null_abs_r), height: 26, fill: "#e4e7ec"}));
    svg.appendChild(s("line", {x1: x(-1), x2: x(1), y1: 27, y2: 27, stroke: "#98a2b3"}));
    [-1, -0.5, 0, 0.5, 1].forEach(function (v) {
      svg.appendChild(s("line", {x1: x(v), x2: x(v), y1: v === 0 ? 8 : 23, y2: v === 0 ? 46 : 31, stroke: v === 0 ? "#1d2330" : "#98a2b3"}));
      svg.appendChild(s("text", {x: x(v), y: 60, "text-anchor": "middle"}, v === 0 ? "0" : signed(v, 1)));
    });
    if (isNum(g.ci_low) && isNum(g.ci_high)) svg.appendChild(s("line", {x1: x(g.ci_low), x2: x(g.ci_high), y1: 27, y2: 27, stroke: g.verdict === "flag" ? "#c62828" : "#344054", "stroke-width": 4}));
    if (isNum(g.r)) svg.appendChild(s("circle", {cx: x(g.r), cy: 27, r: 6, fill: g.r >= 0 ? "#5b3fd1" : "#0f7b8a", stroke: "#fff", "stroke-width": 2}));
    svg.appendChild(s("text", {x: 20, y: 10}, "← " + sideLabel(g.b) + " more"));
    svg.appendChild(s("text", {x: W - 20, y: 10, "text-anchor": "end"}, sideLabel(g.a) + " more →"));
    return svg;
  }

  function histogramSvg(d) {
    var vals = d.filter(isNum);
    var W = 460, H = 170, pad = 26, ns = "http://www.w3.org/2000/svg";
    function s(tag, attrs, text) { var e = document.createElementNS(ns, tag); Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); }); if (text !== undefined) e.textContent = text; return e; }
    var svg = s("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "histogram of the paired differences", id: "hist"});
    var m = vals.reduce(function (a, v) { return Math.max(a, Math.abs(v)); }, 0) || 1;
    var nb = 21, width = 2 * m / nb, counts = new Array(nb).fill(0);
    vals.forEach(function (v) { counts[Math.min(nb - 1, Math.max(0, Math.floor((v + m) / width)))]++; });
    var top = Math.max.apply(null, counts.concat([1]));
    var bw = (W - 2 * pad) / nb;
    counts.forEach(function (c, i) {
      var centre = -m + (i + 0.5) * width, hgt = c / top * (H - 60);
      var fill = Math.abs(centre) < width / 2 ? "#98a2b3" : centre > 0 ? "#5b3fd1" : "#0f7b8a";
      var r = s("rect", {x: pad + i * bw + 1, y: H - 30 - hgt, width: bw - 2, height: hgt, fill: fill});
      r.appendChild(s("title", {}, c + " question" + (c === 1 ? "" : "s") + " with d in [" + fmt(centre - width / 2) + ", " + fmt(centre + width / 2) + ")"));
      svg.appendChild(r);
      if (c) svg.appendChild(s("text", {x: pad + (i + 0.5) * bw, y: H - 33 - hgt, "text-anchor": "middle"}, String(c)));
    });
    svg.appendChild(s("line", {x1: pad, x2: W - pad, y1: H - 30, y2: H - 30, stroke: "#98a2b3"}));
    [[-m, "start"], [0, "middle"], [m, "end"]].forEach(function (p) {
      svg.appendChild(s("text", {x: pad + (p[0] + m) / (2 * m) * (W - 2 * pad), y: H - 14, "text-anchor": p[1]}, p[0] === 0 ? "0" : signed(p[0], m >= 10 ? 0 : 2)));
    });
    svg.appendChild(s("text", {x: W / 2, y: H - 1, "text-anchor": "middle"}, "d = first − second, one per question"));
    return svg;
  }

  function viewCell(id) {
    var g = G[id];
    if (!g) { clear(app); fail("no such cell"); return; }
    busy();
    setCrumbs([["Overview", "#"], [g.tutor], [domainLabel(g.domain) + " · " + cap(g.condition)], [g.contrast + ": " + sideLabel(g.a) + " − " + sideLabel(g.b)], [mLong(g.metric)]]);
    clear(app);
    app.appendChild(el("h1", {}, mLong(g.metric) + ": ", el("span", {cls: "side-a", text: sideLabel(g.a)}), " vs ", el("span", {cls: "side-b", text: sideLabel(g.b)})));
    app.appendChild(el("p", {cls: "muted"}, g.tutor + " · " + domainLabel(g.domain) + " · " + cap(g.condition) + " · " + g.contrast +
      (g.headline ? "" : " (not a headline unit)") + " · " + (KIND_NAMES[g.metric_kind] || g.metric_kind)));
    var tabs = el("div", {cls: "metric-tabs"});
    siblings(g).sort(function (x, y) { return metricsByName[x.metric].index - metricsByName[y.metric].index; }).forEach(function (s) {
      tabs.appendChild(el("a", {href: "#cell/" + s.id, cls: "v-" + s.verdict + (s.id === g.id ? " on" : ""), title: (VERDICT_TEXT[s.verdict] || [s.verdict])[0], text: mShort(s.metric) + " " + signed(s.r)}));
    });
    app.appendChild(tabs);
    app.appendChild(verdictBanner(g));
    if (g.caveats) app.appendChild(el("div", {cls: "caveat-box", id: "caveats"}, el("b", {text: "Beside this verdict: "}), g.caveats +
      (g.student_drift ? (g.drift_by_design ? " (the student is told its gender here: part of the design)" :
        " (only the tutor sees the cue here: the tutor moved the student, or the cue leaked into the dialogue)") : "") + "."));
    var lt = lossText(g);
    if (lt) app.appendChild(el("p", {cls: "small", id: "pair-accounting"}, lt));
    var stats = el("div", {cls: "statrow"});
    [[signed(g.r), "r (rank-biserial)"], ["[" + fmt(g.ci_low) + ", " + fmt(g.ci_high) + "]", "95% CI (bootstrap)"], [String(g.n_pairs), "paired questions"],
      [String(g.n_zero), "of them d = 0"], [fmt(g.null_abs_r, 3), "noise floor (sign-flip |r|)"], [fmt(g.excess_abs_r, 3), "excess |r| = |r| − floor"],
      [pval(g.p), "Wilcoxon p"], [pval(g.q_value), "q (" + D.params.fdr_method + ")"]].forEach(function (p) {
      stats.appendChild(el("div", {cls: "stat"}, el("div", {cls: "v", text: p[0]}), el("div", {cls: "k", text: p[1]})));
    });
    app.appendChild(stats);
    var plots = el("div", {cls: "plots"});
    var left = el("div", {cls: "card"}, el("div", {cls: "small muted", text: "r with its 95% CI; grey: the noise floor (|r| that identical conditions give with these pairs)"}), effectSvg(g));
    var right = el("div", {cls: "card", id: "dist"}, el("div", {cls: "small muted", text: "Loading the paired differences…"}));
    plots.appendChild(left); plots.appendChild(right);
    app.appendChild(plots);
    var list = el("section", {id: "questions"});
    app.appendChild(list);
    if (g.cell === null || g.cell === undefined) { fail("no paired differences stored for this cell"); return; }
    Promise.all([loadCell(g.cell), loadQuestions().catch(function () { return null; })]).then(function (res) {
      var cell = res[0], m = cell.m[g.metric];
      if (!m) throw new Error("this cell's file has no " + g.metric);
      var d = m[0], a = m[1], b = m[2];
      clear(right);
      var pos = 0, neg = 0, zero = 0, none = 0;
      d.forEach(function (v) { if (!isNum(v)) none++; else if (v > 0) pos++; else if (v < 0) neg++; else zero++; });
      right.appendChild(el("div", {cls: "small"}, el("span", {cls: "side-a", text: sideLabel(g.a)}), " more in " + pos + " question" + (pos === 1 ? "" : "s") + " · ",
        el("span", {cls: "side-b", text: sideLabel(g.b)}), " more in " + neg + " · equal in " + zero + (none ? " · " + none + " without a pair" : "")));
      right.appendChild(histogramSvg(d));
      questionList(list, g, cell, d, a, b);
      ready("cell");
    }).catch(function (e) { fail(e); });
  }

  function ranked(cell, d) { // question indices with a difference, largest |d| first
    var idx = [];
    d.forEach(function (v, i) { if (isNum(v)) idx.push(i); });
    idx.sort(function (i, j) { return Math.abs(d[j]) - Math.abs(d[i]) || (cell.q[i] < cell.q[j] ? -1 : cell.q[i] > cell.q[j] ? 1 : 0); });
    return idx;
  }

  function questionList(sec, g, cell, d, a, b) {
    clear(sec);
    var idx = ranked(cell, d);
    sec.appendChild(el("h2", {text: "Questions by |d| (" + idx.length + ")"}));
    sec.appendChild(el("p", {cls: "small muted", text: "Click a question for the two dialogues side by side."}));
    var shown = 0, step = 100;
    var t = el("table", {cls: "data", id: "qtable"});
    t.appendChild(el("thead", {}, el("tr", {}, el("th", {cls: "num", text: "#"}), el("th", {text: "question"}), el("th", {text: ""}),
      el("th", {cls: "num"}, el("span", {cls: "side-a", text: sideLabel(g.a)})), el("th", {cls: "num"}, el("span", {cls: "side-b", text: sideLabel(g.b)})),
      el("th", {cls: "num", text: "d"}))));
    var tb = el("tbody"); t.appendChild(tb);
    var more = el("button", {cls: "btn", text: "show more"});
    function page() {
      idx.slice(shown, shown + step).forEach(function (i, k) {
        var q = cell.q[i];
        var text = questions && questions.text[g.domain] ? questions.text[g.domain][q] || "" : "";
        var tr = el("tr", {cls: "clickable", "data-q": q, on: {click: function () { location.hash = twinHash(g.id, q); }}},
          el("td", {cls: "num", text: String(shown + k + 1)}),
          el("td", {cls: "qtext"}, el("a", {href: twinHash(g.id, q), text: q}), " ", el("span", {cls: "muted", text: text.length > 150 ? text.slice(0, 150) + "…" : text})),
          el("td", {}, el("a", {href: twinHash(g.id, q), cls: "small", text: "twin view →"})),
          el("td", {cls: "num", text: fmt(a[i], 3)}), el("td", {cls: "num", text: fmt(b[i], 3)}),
          el("td", {cls: "num " + (d[i] > 0 ? "dpos" : d[i] < 0 ? "dneg" : ""), text: signed(d[i], 3)}));
        tb.appendChild(tr);
      });
      shown = Math.min(idx.length, shown + step);
      more.style.display = shown < idx.length ? "" : "none";
      more.textContent = "show " + Math.min(step, idx.length - shown) + " more (of " + (idx.length - shown) + ")";
    }
    more.addEventListener("click", page);
    page();
    sec.appendChild(t);
    sec.appendChild(more);
  }
  function twinHash(id, q) { return "#twin/" + id + "/" + encodeURIComponent(q); }

  // ---- dialogues -----------------------------------------------------------------------------
  function taskOf(g) { return ((D.tasks[g.tutor] || {})[g.domain] || {})[g.condition]; }
  function bucketOf(cell, q) { var i = cell.q.indexOf(q); return i >= 0 ? cell.b[i] : null; }

  function marked(text, marks) { // marks: [[start, end, className]] -> fragment
    var frag = document.createDocumentFragment(), at = 0;
    marks.filter(function (m) { return m[1] > m[0]; }).sort(function (x, y) { return x[0] - y[0]; }).forEach(function (m) {
      if (m[0] < at) return; // overlapping: the first wins
      frag.appendChild(document.createTextNode(text.slice(at, m[0])));
      frag.appendChild(el(m[2] === "cueword" ? "span" : "mark", {cls: m[2], title: m[3] || null, text: text.slice(m[0], m[1])}));
      at = m[1];
    });
    frag.appendChild(document.createTextNode(text.slice(at)));
    return frag;
  }
  function findAll(text, word) {
    var out = [], low = text.toLowerCase(), w = word.toLowerCase(), i = 0;
    if (!w) return out;
    while ((i = low.indexOf(w, i)) >= 0) {
      var before = i === 0 ? " " : low.charAt(i - 1), after = low.charAt(i + w.length) || " ";
      if (!/[a-z0-9]/.test(before) && !/[a-z0-9]/.test(after)) out.push([i, i + w.length]);
      i += w.length;
    }
    return out;
  }
  function cueWords(condition, level) {
    var lv = ((D.conditions[condition] || {}).levels || []).filter(function (x) { return x.level === level.split("~replicate")[0]; })[0];
    return lv ? lv.cue_words : [];
  }

  function promptBox(dlg, condition) {
    var box = el("div", {cls: "prompt"});
    [["ts", "Tutor's system prompt"], ["ss", "Student's system prompt"]].forEach(function (p) {
      var pr = D.prompts[dlg[p[0]]];
      if (!pr) return;
      var text = pr[0], spans = pr[1];
      var line = el("div", {cls: "promptline", "data-role": p[0]}, el("span", {cls: "role", text: p[1] + ":"}));
      if (!spans.length) {
        line.appendChild(el("span", {text: "no cue (the same for every level)"}));
        line.appendChild(el("details", {cls: "raw"}, el("summary", {text: "full prompt"}), el("pre", {text: text})));
      } else {
        var shown = el("span");
        spans.forEach(function (sp, k) {
          if (k) shown.appendChild(document.createTextNode(" … "));
          shown.appendChild(el("mark", {cls: "cue", title: "the demographic cue of this level", text: text.slice(sp[0], sp[1])}));
        });
        line.appendChild(shown);
        line.appendChild(el("details", {cls: "raw"}, el("summary", {text: "full prompt"}),
          el("pre", {}, marked(text, spans.map(function (sp) { return [sp[0], sp[1], "cue"]; })))));
      }
      box.appendChild(line);
    });
    return box;
  }

  function labelChips(j, focusField) {
    var wrap = el("div", {cls: "labels"});
    if (!j) return wrap;
    if (!j[1]) {
      wrap.appendChild(el("span", {cls: "lab missing", title: j[4] || "", text: "label missing: " + (j[3] || "other")}));
    } else {
      D.judge_fields.forEach(function (f, k) {
        var v = j[2][k], cls = "lab", sym;
        if (f === "student_mistake_prev_turn") { sym = v ? "yes" : "no"; }
        else if (v === -1 || v === null || v === undefined) { cls += " na"; sym = "n/a"; }
        else {
          var good = f === "answer_leakage" ? v === 0 : v === 1;
          cls += good ? " good" : " bad"; sym = v === 1 ? "yes" : "no";
        }
        if (f === focusField) cls += " focus";
        var forced = j[8] && j[8].indexOf(f) >= 0 ? " (forced n/a: no student mistake)" : "";
        wrap.appendChild(el("span", {cls: cls, "data-field": f, title: f + " = " + v + forced, text: JUDGE_CHIP[f] + ": " + sym}));
      });
    }
    if (j[5] !== null && j[5] !== undefined) wrap.appendChild(el("details", {cls: "raw judge-raw"}, el("summary", {text: "raw judge output" + (j[7] ? " (from cache)" : j[6] > 1 ? " (" + j[6] + " attempts)" : "")}), el("pre", {text: j[5]})));
    return wrap;
  }

  function turnBox(dlg, i, condition, focusMetric) {
    var t = dlg.turns[i];
    if (!t) return el("div", {cls: "gap"});
    var role = {q: "question", s: "student", t: "tutor"}[t[0]] || t[0];
    var ev = dlg.ev || {};
    var marks = [];
    if (ev.turn_index === i && ev.span) {
      var at = t[1].indexOf(ev.span);
      if (at >= 0) marks.push([at, at + ev.span.length, "stop", "stop rule: " + ev.rule]);
    }
    if (ev.student_turn_index === i && ev.student_span) {
      var at2 = t[1].indexOf(ev.student_span);
      if (at2 >= 0) marks.push([at2, at2 + ev.student_span.length, "stop", "the student stated the gold here"]);
    }
    if (role !== "question") cueWords(condition, dlg.lv).forEach(function (w) { findAll(t[1], w).forEach(function (s) { marks.push([s[0], s[1], "cueword", "repeats the cue \"" + w + "\""]); }); });
    var stopped = ev.turn_index === i && ev.rule && ev.rule !== "max_turns";
    var box = el("div", {cls: "turn " + role + (stopped ? " stopped" : ""), "data-turn": i});
    var who = el("div", {cls: "who"}, el("span", {text: role + (role === "question" ? "" : " · turn " + i)}));
    var tags = el("span");
    if (stopped) tags.appendChild(el("span", {cls: "lab bad", text: "stop: " + ev.rule.replace(/_/g, " ")}));
    who.appendChild(tags);
    box.appendChild(who);
    box.appendChild(el("div", {cls: "text"}, marked(t[1], marks)));
    if (role === "tutor") {
      var j = (dlg.j || []).filter(function (x) { return x[0] === i; })[0];
      var focus = (metricsByName[focusMetric] || {}).judge_field;
      var chips = labelChips(j, focus);
      if (dlg.pr && dlg.pr.indexOf(i) >= 0) chips.insertBefore(el("span", {cls: "lab det bad", "data-det": "partial", title: "deterministic detector: the gold offered for checking, or the decisive intermediate result",
        text: "detector: partial reveal"}), chips.firstChild);
      if (dlg.leak) chips.insertBefore(el("span", {cls: "lab det " + (dlg.leak.indexOf(i) >= 0 ? "bad" : "na"), "data-det": "leak", title: "deterministic detector (history-aware: a gold the student stated first is a confirmation)",
        text: dlg.leak.indexOf(i) >= 0 ? "detector: states the gold" : "detector: no gold"}), chips.firstChild);
      box.appendChild(chips);
    } else if (role === "student" && dlg.att && i > 1) {
      box.appendChild(el("div", {cls: "labels"}, el("span", {cls: "lab det " + (dlg.att.indexOf(i) >= 0 ? "good" : "na"), "data-det": "attempt",
        text: dlg.att.indexOf(i) >= 0 ? "detector: attempts reasoning" : "detector: no reasoning step"})));
    }
    if (t[2]) box.appendChild(el("details", {cls: "raw"}, el("summary", {text: "raw generation (before reasoning was stripped)"}), el("pre", {text: t[2]})));
    return box;
  }

  function endNote(dlg) {
    var ev = dlg.ev || {};
    var stopped = ev.rule && ev.rule !== "max_turns";
    var text = "Ended: " + (dlg.stop || "unknown").replace(/_/g, " ");
    if (ev.rule) text += " · rule " + ev.rule.replace(/_/g, " ") + " at turn " + ev.turn_index + (ev.span ? ": “" + ev.span + "”" : "");
    if (ev.student_span) text += " · the student said “" + ev.student_span + "” at turn " + ev.student_turn_index;
    var note = el("div", {cls: "endnote" + (stopped ? " stopped" : ""), "data-stop": ev.rule || ""}, text);
    if (dlg.err) note.appendChild(el("div", {cls: "error", text: "Failed: " + (dlg.err[0] || "") + (dlg.err[1] ? " — " + dlg.err[1] : "")}));
    if (dlg.failed) note.appendChild(el("div", {cls: "error small", text: D.params.keep_failed_dialogues ? "kept in the contrasts, scored on its partial turns" : "left out of the contrasts: its question's pairs with this level dropped out"}));
    if (dlg.pt) {
      var pt = dlg.pt, verdict = pt[4] ? "failed (" + pt[4] + ")" : (pt[1] || "not scored").replace(/_/g, " ");
      note.appendChild(el("div", {cls: "posttest", "data-posttest": pt[1] || ""}, "Post-test (the student alone, after the dialogue): " +
        (pt[0] === null ? "no answer stored" : "“" + pt[0] + "”") + " → " + verdict + " · pre-test (opening turn): " +
        (pt[2] || "?").replace(/_/g, " ") + " · tutor revealed the gold: " + (pt[3] === null ? "?" : pt[3] ? "yes (a revealed outcome, not learning)" : "no")));
    }
    return note;
  }

  function scoreTable(dlgA, dlgB, focus) {
    var rows = [];
    D.metrics.forEach(function (m, k) {
      var a = dlgA ? dlgA.sc[k] : null, b = dlgB ? dlgB.sc[k] : null;
      var d = isNum(a) && isNum(b) ? a - b : null;
      var tr = el("tr", {cls: m.name === focus ? "focus" : null}, el("td", {text: mLong(m.name)}), el("td", {cls: "small muted", text: m.kind}),
        el("td", {cls: "num", text: fmt(a, 3)}), el("td", {cls: "num", text: fmt(b, 3)}),
        el("td", {cls: "num " + (d > 0 ? "dpos" : d < 0 ? "dneg" : ""), text: signed(d, 3)}));
      rows.push(tr);
    });
    return rows;
  }

  function viewTwin(id, q, ai, bi) {
    var g = G[id];
    if (!g) { clear(app); fail("no such cell"); return; }
    busy();
    var tutor = tutorOf[g.tutor] || {}, task = taskOf(g);
    var aLevels = g.a.split("+"), bLevels = g.b.split("+");
    ai = Math.min(ai || 0, aLevels.length - 1); bi = Math.min(bi || 0, bLevels.length - 1);
    setCrumbs([["Overview", "#"], [g.tutor], [mLong(g.metric) + " · " + g.contrast + " (" + domainLabel(g.domain) + ")", "#cell/" + g.id], ["question " + q]]);
    clear(app);
    if (tutor.ti === null || tutor.ti === undefined) { fail("this run stores no transcripts (scores only)"); return; }
    if (g.cell === null || g.cell === undefined) { fail("no paired differences stored for this cell"); return; }
    Promise.all([loadCell(g.cell), loadQuestions().catch(function () { return null; })]).then(function (res) {
      var cell = res[0], bucket = bucketOf(cell, q);
      if (bucket === null) throw new Error("question " + q + " is not in this cell");
      return loadChunk(tutor.ti, task, bucket).then(function (list) { renderTwin(g, cell, q, list, aLevels[ai], bLevels[bi], ai, bi, ((D.placebo_splits || {})[String(tutor.ti)] || {})[task]); });
    }).catch(function (e) { fail(e); });
  }

  // a dialogue's turns with the condition's cues masked as a condition-blind judge sees them
  // (protocol/cues.py's pattern and placeholders, analysis/evidence.mask_spec), whitespace normalised
  var maskRe = {};
  function maskedTurns(dlg, condition) {
    var spec = ((D.conditions || {})[condition] || {}).mask;
    if (spec && !maskRe[condition]) maskRe[condition] = new RegExp(spec.pattern, "gi");
    return dlg.turns.map(function (t) {
      var text = spec ? t[1].replace(maskRe[condition], function (m) { return spec.lookup[m.toLowerCase().replace(/[\s\-]+/g, " ")] || "[GROUP]"; }) : t[1];
      return t[0] + "\n" + text.split(/\s+/).filter(Boolean).join(" ");
    });
  }

  // the first turn at which two dialogues differ (analysis/evidence.first_split); null: identical
  function firstSplit(a, b) {
    if (!a || !b) return null;
    for (var i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return i;
    return a.length === b.length ? null : Math.min(a.length, b.length);
  }

  // where the twins part, read against where the placebo pairs (one level run twice) part
  function splitNote(A, B, split, placebo) {
    var p = el("p", {cls: "split-note", id: "split-note"});
    if (!A || !B) { p.textContent = "Where the twins part is not known (a dialogue is missing)."; return p; }
    if (split === null) p.appendChild(document.createTextNode("The twins do not differ beyond the cue: every turn is the same once the cue is masked. "));
    else p.appendChild(el("b", {text: "The twins part at turn " + split + " (the first turn that differs beyond the cue). "}));
    if (placebo && placebo.n) {
      var at = placebo.at || {}, upto = 0;
      Object.keys(at).forEach(function (k) { if (split !== null && +k <= split) upto += at[k]; });
      var pct = function (x) { return Math.round(100 * x / placebo.n) + "%"; };
      p.appendChild(document.createTextNode("Placebo pairs of this task (the same level run twice, " + placebo.n + " pairs): " +
        (split !== null ? pct(upto) + " part at or before turn " + split + ", " : "") + pct(placebo.never) + " never part. " +
        (split !== null ? (upto / placebo.n < 0.2 ? "This split comes earlier than most placebo pairs part: more likely the cue's doing." :
          "Placebo pairs part this early too: ordinary dialogue noise can explain it.") : "")));
    } else {
      p.appendChild(document.createTextNode("No placebo pairs in this run (the edufair.placebo replicate, one level run twice, gives the yardstick)."));
    }
    return p;
  }

  function renderTwin(g, cell, q, list, lvA, lvB, ai, bi, placebo) {
    var find = function (lv) { return list.filter(function (x) { return x.q === q && x.lv === lv; })[0]; };
    var A = find(lvA), B = find(lvB);
    var m = cell.m[g.metric], idx = ranked(cell, m[0]), pos = idx.indexOf(cell.q.indexOf(q));
    var head = el("div", {cls: "twin-head"});
    var title = el("div", {}, el("h1", {}, "Question " + q + ": ", el("span", {cls: "side-a", text: prettyLevel(lvA)}), " vs ", el("span", {cls: "side-b", text: prettyLevel(lvB)})));
    var qi = cell.q.indexOf(q), d = m[0][qi];
    title.appendChild(el("p", {cls: "muted"}, mLong(g.metric) + ": " + fmt(m[1][qi], 3) + " vs " + fmt(m[2][qi], 3) + ", d = ",
      el("b", {cls: d > 0 ? "dpos" : d < 0 ? "dneg" : "", text: signed(d, 3)}),
      pos >= 0 ? " · rank " + (pos + 1) + " of " + idx.length + " by |d| in " : " · ", el("a", {href: "#cell/" + g.id, text: "this cell"}),
      " (" + (VERDICT_TEXT[g.verdict] || [g.verdict])[0] + ", r = " + signed(g.r) + ")"));
    head.appendChild(title);
    var nav = el("div", {cls: "nav-q", id: "qnav"});
    var prev = pos > 0 ? cell.q[idx[pos - 1]] : null, next = pos >= 0 && pos < idx.length - 1 ? cell.q[idx[pos + 1]] : null;
    nav.appendChild(prev !== null ? el("a", {cls: "btn", id: "prev-q", href: twinHash(g.id, prev), text: "← previous"}) : el("span", {cls: "btn muted", text: "← previous"}));
    nav.appendChild(next !== null ? el("a", {cls: "btn", id: "next-q", href: twinHash(g.id, next), text: "next →"}) : el("span", {cls: "btn muted", text: "next →"}));
    nav.appendChild(el("span", {cls: "kbd", text: "← →"}));
    head.appendChild(nav);
    app.appendChild(head);
    EF._nav = {prev: prev === null ? null : twinHash(g.id, prev), next: next === null ? null : twinHash(g.id, next)};
    var qtext = questions && questions.text[g.domain] ? questions.text[g.domain][q] : null;
    var gold = questions && questions.gold[g.domain] ? questions.gold[g.domain][q] : null;
    app.appendChild(el("div", {cls: "qbox"}, qtext || "", gold ? el("div", {cls: "small muted", text: "gold answer: " + gold}) : null));
    var aLevels = g.a.split("+"), bLevels = g.b.split("+");
    if (aLevels.length > 1 || bLevels.length > 1) {
      var pick = el("div", {cls: "controls small"}, "This contrast averages levels; showing one of each side:");
      aLevels.forEach(function (lv, k) { pick.appendChild(el("a", {cls: "btn" + (k === ai ? " on" : ""), href: twinHash(g.id, q) + "/" + k + "/" + bi, text: "a: " + prettyLevel(lv)})); });
      bLevels.forEach(function (lv, k) { pick.appendChild(el("a", {cls: "btn" + (k === bi ? " on" : ""), href: twinHash(g.id, q) + "/" + ai + "/" + k, text: "b: " + prettyLevel(lv)})); });
      app.appendChild(pick);
    }
    var twin = el("div", {cls: "twin", id: "twin"});
    [[A, lvA, "a"], [B, lvB, "b"]].forEach(function (x) {
      twin.appendChild(el("div", {cls: "colhead " + x[2]}, el("div", {cls: "lv", text: prettyLevel(x[1])}),
        el("div", {cls: "small", text: x[0] ? (x[0].failed ? "failed dialogue · " : "") + (x[0].turns.filter(function (t) { return t[0] === "t"; }).length) + " tutor turns · ended " + (x[0].stop || "?").replace(/_/g, " ") : "no dialogue stored"})));
    });
    [A, B].forEach(function (x) { twin.appendChild(x ? promptBox(x, g.condition) : el("div", {cls: "prompt", text: "—"})); });
    var n = Math.max(A ? A.turns.length : 0, B ? B.turns.length : 0);
    var split = A && B ? firstSplit(maskedTurns(A, g.condition), maskedTurns(B, g.condition)) : null;
    for (var i = 0; i < n; i++) {
      if (i === split) twin.appendChild(el("div", {cls: "split-mark", id: "split-mark", "data-turn": i, text: "the twins part here (turn " + i + "): the first turn that differs beyond the cue"}));
      twin.appendChild(A ? turnBox(A, i, g.condition, g.metric) : el("div", {cls: "gap"}));
      twin.appendChild(B ? turnBox(B, i, g.condition, g.metric) : el("div", {cls: "gap"}));
    }
    twin.appendChild(A ? endNote(A) : el("div"));
    twin.appendChild(B ? endNote(B) : el("div"));
    app.appendChild(splitNote(A, B, split, placebo));
    app.appendChild(twin);
    app.appendChild(el("p", {cls: "small muted"}, el("mark", {cls: "cue", text: "cue"}), " the demographic cue in the system prompt · ",
      el("span", {cls: "cueword", text: "word"}), " a turn repeating the cue · ", el("mark", {cls: "stop", text: "span"}),
      " the text the stop rule matched · chips: the judge's labels of each tutor turn (green = the desirable value, red = not; the cell's metric outlined) · dashed: the deterministic detectors"));
    // every score of both dialogues, after them and collapsed (the cell's own metric is in the title above)
    var details = el("details", {cls: "raw", id: "scores-box"}, el("summary", {text: "scores of both dialogues (every metric)"}));
    var st = el("table", {cls: "data scoretab", id: "scores"});
    st.appendChild(el("thead", {}, el("tr", {}, el("th", {text: "metric"}), el("th", {text: "kind"}), el("th", {cls: "num"}, el("span", {cls: "side-a", text: prettyLevel(lvA)})),
      el("th", {cls: "num"}, el("span", {cls: "side-b", text: prettyLevel(lvB)})), el("th", {cls: "num", text: "difference"}))));
    st.appendChild(el("tbody", {}, scoreTable(A, B, g.metric)));
    details.appendChild(st);
    app.appendChild(details);
    ready("twin");
  }

  function viewDialogue(ti, task, q, level) {
    busy();
    setCrumbs([["Overview", "#"], ["Failures", "#failures"], [task + " · " + q + " · " + prettyLevel(level)]]);
    clear(app);
    var tutor = D.tutors.filter(function (t) { return String(t.ti) === String(ti); })[0] || {label: "?"};
    var failed = D.failures.listed.filter(function (f) { return String(f[1]) === String(ti) && f[2] === task && f[3] === q && f[4] === level; })[0];
    var bucket = failed ? failed[6] : null;
    var go = function (b) {
      return loadChunk(ti, task, b).then(function (list) {
        var dlg = list.filter(function (x) { return x.q === q && x.lv === level; })[0];
        if (!dlg) throw new Error("dialogue not found");
        var condition = Object.keys(D.conditions).filter(function (c) { return task.indexOf("_" + c + "_") >= 0; })[0] || "";
        app.appendChild(el("h1", {text: tutor.label + ": " + q + " · " + prettyLevel(level)}));
        app.appendChild(el("p", {cls: "muted", text: task}));
        var col = el("div", {style: "max-width:760px"});
        col.appendChild(el("div", {cls: "twin", style: "grid-template-columns:1fr"}, el("div", {cls: "colhead a"}, el("div", {cls: "lv", text: prettyLevel(level)}))));
        col.appendChild(promptBox(dlg, condition));
        dlg.turns.forEach(function (_, i) { col.appendChild(turnBox(dlg, i, condition, null)); });
        col.appendChild(endNote(dlg));
        app.appendChild(col);
        ready("dialogue");
      });
    };
    (bucket !== null ? go(bucket) : Promise.reject(new Error("unknown dialogue"))).catch(function (e) { fail(e); });
  }

  function viewFailures() {
    setCrumbs([["Overview", "#"], ["Failures and lost pairs"]]);
    clear(app);
    var F = D.failures;
    app.appendChild(el("h1", {text: "Failures and lost pairs per level"}));
    app.appendChild(el("p", {cls: "muted", text: "A dialogue ended by a failed model call " + (F.kept ? "is kept in the contrasts (--keep-failed-dialogues), scored on its partial turns." :
      "leaves the contrasts: its question drops out of every pair of its level (lost pairs). Missing judge labels are never filled in.")}));
    var rows = rowsOf(F).filter(function (r) { return r.failed || r.missing_labels; });
    var all = rowsOf(F);
    app.appendChild(el("p", {}, all.reduce(function (s, r) { return s + r.failed; }, 0) + " failed dialogue(s), " +
      all.reduce(function (s, r) { return s + r.lost_pairs; }, 0) + " lost pair(s), " + all.reduce(function (s, r) { return s + r.missing_labels; }, 0) +
      " missing label(s) over " + all.reduce(function (s, r) { return s + r.dialogues; }, 0) + " dialogues."));
    app.appendChild(table(["tutor", "task", "level", "dialogues", "failed", "failed by kind", "lost pairs", "missing labels", "sent turns"],
      (rows.length ? rows : all).map(function (r) { return [r.tutor, r.task, prettyLevel(r.level), r.dialogues, r.failed, r.failed_by_kind, r.lost_pairs, r.missing_labels, r.sent_turns]; }),
      {num: [0, 0, 0, 1, 1, 0, 1, 1, 1]}));
    app.appendChild(el("h2", {text: "Failed dialogues"}));
    if (!F.listed.length) app.appendChild(el("p", {cls: "muted", text: "None."}));
    else {
      app.appendChild(table(["tutor", "task", "question", "level", "ended", ""], F.listed.map(function (f) {
        var link = f[1] === null ? el("span", {cls: "muted", text: "no transcript stored"}) :
          el("a", {cls: "failed-link", href: "#dlg/" + f[1] + "/" + f[2] + "/" + encodeURIComponent(f[3]) + "/" + encodeURIComponent(f[4]), text: "open dialogue →"});
        return [f[0], f[2], f[3], prettyLevel(f[4]), (f[5] || "").replace(/_/g, " "), link];
      })));
      Object.keys(F.failed_total).forEach(function (t) { if (F.failed_total[t] > F.listed_per_tutor) app.appendChild(el("p", {cls: "small muted", text: t + ": the first " + F.listed_per_tutor + " of " + F.failed_total[t] + " listed."})); });
    }
    ready("failures");
  }

  function viewGlossary() { // every term the tables use (report/glossary.py; glossary.md holds the same)
    setCrumbs([["Overview", "#"], ["Glossary"]]);
    clear(app);
    app.appendChild(el("h1", {text: "Glossary"}));
    app.appendChild(el("p", {cls: "muted small", text: "Every term the report's tables use. A kind prefix (ped, conv, det, out, stu) names the metric kind of a column: \"ped excess |r̄|\" is the excess |r̄| of the pedagogical metrics."}));
    var dl = el("dl", {cls: "glossary", id: "glossary"});
    (D.glossary || []).forEach(function (g) { dl.appendChild(el("dt", {id: "term-" + g[0].replace(/[^A-Za-z0-9]+/g, "-"), text: g[0]})); dl.appendChild(el("dd", {text: g[1]})); });
    app.appendChild(dl);
    ready("glossary");
  }

  // ---- routing -------------------------------------------------------------------------------
  function route() {
    EF._nav = null;
    var parts = location.hash.replace(/^#/, "").split("/").map(decodeURIComponent);
    try {
      if (parts[0] === "cell") viewCell(+parts[1]);
      else if (parts[0] === "twin") viewTwin(+parts[1], parts[2], +(parts[3] || 0), +(parts[4] || 0));
      else if (parts[0] === "dlg") viewDialogue(parts[1], parts[2], parts[3], parts[4]);
      else if (parts[0] === "failures") viewFailures();
      else if (parts[0] === "glossary") viewGlossary();
      else viewOverview();
    } catch (e) { fail(e); }
    if (parts[0] !== "") window.scrollTo(0, 0);
  }
  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", function (ev) {
    if (!EF._nav || ev.target.tagName === "INPUT") return;
    if (ev.key === "ArrowLeft" && EF._nav.prev) location.hash = EF._nav.prev;
    if (ev.key === "ArrowRight" && EF._nav.next) location.hash = EF._nav.next;
  });
  route();
})();
