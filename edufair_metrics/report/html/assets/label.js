// The label mode's page (report/html/label.py): the sample's items by position, answers posted to
// the local server as they are given (each post carries the item's answers so far; the last line
// for a turn wins), so closing the tab loses nothing and a second session resumes.
(function () {
  "use strict";
  var S = { items: [], answers: {}, k: 0, q: 0, n: 0 };
  var ANSWER_KEYS = { y: "yes", n: "no", a: "na" };
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function complete(k) {
    var a = S.answers[String(k)] || {};
    return LABEL.metrics.every(function (m) { return a[m] !== undefined; });
  }
  function done() {
    var c = 0;
    for (var k = 0; k < S.n; k++) if (complete(k)) c++;
    return c;
  }
  function render() {
    document.getElementById("progress").textContent = done() + " of " + S.n;
    document.getElementById("where").textContent = "Turn " + (S.k + 1) + " of " + S.n;
    var box = document.getElementById("dialogue");
    box.innerHTML = "";
    var turns = S.items[S.k].turns;
    turns.forEach(function (t, i) {
      var d = el("div", "turn " + t[0] + (i === turns.length - 1 ? " judged" : ""));
      d.appendChild(el("span", "role", t[0] === "question" ? "question" : t[0]));
      d.appendChild(document.createTextNode(t[1]));
      box.appendChild(d);
    });
    var qs = document.getElementById("questions");
    qs.innerHTML = "";
    var mine = S.answers[String(S.k)] || {};
    LABEL.metrics.forEach(function (m, i) {
      var q = el("div", "q" + (i === S.q ? " current" : ""));
      q.setAttribute("data-metric", m);
      q.appendChild(el("h3", null, (i + 1) + ". " + m));
      q.appendChild(el("pre", null, LABEL.questions[m] || ""));
      ["yes", "no", "na"].forEach(function (v) {
        var b = el("button", mine[m] === v ? "on" : "", v === "na" ? "not applicable" : v);
        b.setAttribute("data-answer", v);
        b.addEventListener("click", function () { S.q = i; answer(v); });
        q.appendChild(b);
      });
      qs.appendChild(q);
    });
    document.body.setAttribute("data-item", String(S.k));
    document.body.setAttribute("data-ready", "1");
  }
  function post(k, labels) {
    var status = document.getElementById("saved");
    status.textContent = "saving…";
    return fetch("api/label", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ k: k, labels: labels }) }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(t); });
      status.textContent = "saved";
      document.body.setAttribute("data-saved", String(Number(document.body.getAttribute("data-saved") || 0) + 1));
    }).catch(function (e) { status.textContent = "NOT saved: " + e.message; });
  }
  function answer(v) {
    var key = String(S.k);
    var a = S.answers[key] = S.answers[key] || {};
    a[LABEL.metrics[S.q]] = v;
    post(S.k, Object.assign({}, a));
    if (S.q < LABEL.metrics.length - 1) S.q++;
    else if (complete(S.k) && S.k < S.n - 1) { S.k++; S.q = 0; }
    render();
  }
  function go(delta) {
    var k = S.k + delta;
    if (k < 0 || k >= S.n) return;
    S.k = k; S.q = 0; render();
  }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var key = e.key.toLowerCase();
    if (ANSWER_KEYS[key]) { answer(ANSWER_KEYS[key]); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { go(-1); e.preventDefault(); }
    else if (e.key === "ArrowRight") { go(1); e.preventDefault(); }
    else if (e.key === "ArrowUp") { S.q = Math.max(0, S.q - 1); render(); e.preventDefault(); }
    else if (e.key === "ArrowDown") { S.q = Math.min(LABEL.metrics.length - 1, S.q + 1); render(); e.preventDefault(); }
  });
  document.getElementById("prev").addEventListener("click", function () { go(-1); });
  document.getElementById("next").addEventListener("click", function () { go(1); });
  fetch("api/sample").then(function (r) { return r.json(); }).then(function (d) {
    S.items = d.items; S.answers = d.answers || {}; S.n = d.items.length;
    var first = 0;
    while (first < S.n - 1 && complete(first)) first++;  // resume at the first turn not fully answered
    S.k = first;
    render();
  });
})();
