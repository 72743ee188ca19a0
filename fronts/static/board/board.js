// The board keeps itself current: it polls its data URL every POLL_MS with If-None-Match (an
// unchanged board answers 304), asks only for the cards that changed since the version it
// holds, and moves existing card elements rather than redrawing them. A card opens the task's
// panel; its actions post JSON to the board's action URL with the page's CSRF token, and the
// answer (the new card, or the refusal in words) shows without a reload.
(function () {
  "use strict";
  const POLL_MS = 2000;
  const PAIRS_MS = 30000; // the likely duplicates strip: finding pairs reads every live title
  const COLUMNS = ["people", "ready", "blocked", "claimed", "in_review", "done"];
  const FILTERS = ["q", "priority", "label", "member"];
  const board = document.getElementById("board");
  const dataUrl = board.dataset.url;
  const taskUrl = board.dataset.taskUrl; // + number for the panel, + number/action to act
  const controls = JSON.parse(document.getElementById("board-controls").textContent);
  const assignable = JSON.parse(document.getElementById("board-members").textContent);
  const csrf = document.getElementById("csrf");
  const cards = new Map(); // task number -> card element (kept across updates)
  const panel = document.getElementById("panel");
  let etag = null;
  let version = null;
  let openNumber = null; // the task the panel shows
  let openedFrom = null; // the card to give focus back to

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function duration(seconds) {
    const units = [["d", 86400], ["h", 3600], ["min", 60]];
    for (const [unit, size] of units) {
      if (seconds >= size) return Math.floor(seconds / size) + "\u00a0" + unit;
    }
    return Math.floor(seconds) + "\u00a0s";
  }

  function ago(iso) {
    const seconds = (Date.now() - Date.parse(iso)) / 1000;
    if (seconds < 0) return "in " + duration(-seconds);
    return seconds < 60 ? "just now" : duration(seconds) + " ago";
  }

  // Dollars as people write them: $0.00, $0.42, $3.10, $120; below a cent, two figures ($0.0031).
  function money(usd) {
    return usd >= 100 ? usd.toFixed(0) : usd >= 0.01 || usd === 0 ? usd.toFixed(2) : usd.toPrecision(2);
  }

  function when(iso) {
    return iso ? new Date(iso).toLocaleString([], {dateStyle: "medium", timeStyle: "short"}) : "";
  }

  // --- Cards ---------------------------------------------------------------------------------

  function fill(card, data) {
    card.replaceChildren();
    card.href = data.url; // the admin's page: a modified click still opens it
    card.dataset.number = data.number;
    card.classList.toggle("is-lapsing", data.lapsing);
    card.classList.toggle("is-lapsed", Boolean(data.lapsed));
    const head = el("div", "head");
    head.append(el("span", "num", "#" + data.number), el("span", "prio p" + data.priority, "P" + data.priority));
    if (data.slot) head.append(el("span", "slot", data.slot));
    card.append(head, el("div", "title", data.title));
    if (data.labels.length) {
      const labels = el("div", "labels");
      data.labels.forEach(function (label) { labels.append(el("span", "", label)); });
      card.append(labels);
    }
    const meta = el("div", "meta");
    if (data.holders.length) meta.append(el("span", "who", data.holders.join(", ")), " · ");
    if (data.lapsing) meta.append(el("span", "lapsing", "claim lapses soon"), " · ");
    if (data.lapsed) meta.append(el("span", "lapsed", "claim lapsed " + ago(data.lapsed)), " · ");
    if (data.blocked_by.length) meta.append(el("span", "wait", "waits on " + data.blocked_by.map(n => "#" + n).join(", ")), " · ");
    if (data.spend_usd) meta.append(el("span", "spend", "$" + money(data.spend_usd) + " spent"), " · ");
    if (data.attempt && (data.status === "in_review" || data.status === "done")) {
      const a = data.attempt;
      const text = a.state === "waiting"
        ? "attempt " + a.number + " waiting, " + a.confirmations + "/" + a.needed + " confirmed"
        : "attempt " + a.number + " " + a.state;
      meta.append(el("span", "attempt", text), " · ");
    }
    const age = el("span", "age");
    age.dataset.verb = data.age_verb;
    age.dataset.since = data.since;
    age.textContent = data.age_verb + " " + ago(data.since);
    meta.append(age);
    if (data.blocks.length) meta.append(" · blocks " + data.blocks.map(n => "#" + n).join(", "));
    card.append(meta);
    if (card.dataset.refusal) card.append(el("div", "refusal", card.dataset.refusal));
  }

  function cardNode(number) {
    let node = cards.get(number);
    if (!node) {
      node = el("a", "card");
      node.id = "card-" + number;
      cards.set(number, node);
    }
    return node;
  }

  function refreshAges() {
    document.querySelectorAll(".card .age").forEach(function (age) {
      age.textContent = age.dataset.verb + " " + ago(age.dataset.since);
    });
  }

  // --- Figures and the throughput chart ------------------------------------------------------

  function setFigures(s) {
    const set = (id, value) => { document.getElementById(id).textContent = value; };
    set("fig-live", s.live);
    set("fig-ready", s.ready);
    set("fig-blocked", s.blocked);
    set("fig-claimed", (s.by_status.claimed || 0) + (s.by_status.assigned || 0));
    set("fig-awaiting", s.awaiting_check);
    set("fig-done", s.done_last_7_days);
    set("fig-duplicates", s.duplicates_prevented_24h);
    set("fig-oldest", s.oldest_ready ? "#" + s.oldest_ready.task + " · " + duration(s.oldest_ready.age_seconds) : "none");
    const c = s.cost;
    set("fig-spend", "$" + money(c.spend_usd) + (c.budget_usd === null ? "" : " of $" + money(c.budget_usd)));
    set("fig-per-outcome", c.per_accepted_usd === null ? "–" : "$" + money(c.per_accepted_usd));
  }

  const SVG = "http://www.w3.org/2000/svg";

  // One bar per hour, oldest on the left; each bar's tooltip says its hour and count.
  function drawThroughput(t) {
    const svg = document.getElementById("throughput");
    const height = 40;
    const peak = Math.max(1, ...t.done);
    const first = Date.parse(t.first_hour);
    svg.replaceChildren();
    t.done.forEach(function (n, i) {
      const bar = document.createElementNS(SVG, "rect");
      const h = n ? Math.max(1.5, (n / peak) * (height - 2)) : 0.6;
      bar.setAttribute("x", i + 0.1);
      bar.setAttribute("width", 0.8);
      bar.setAttribute("y", height - h);
      bar.setAttribute("height", h);
      bar.setAttribute("class", n ? "bar" : "bar none");
      const tip = document.createElementNS(SVG, "title");
      tip.textContent = n + " done, " + when(new Date(first + i * 3600000).toISOString());
      bar.append(tip);
      svg.append(bar);
    });
    drawAxes(first, t.done.length, peak);
    const total = t.done.reduce((a, b) => a + b, 0);
    document.getElementById("throughput-note").textContent =
      total + " done, busiest hour " + Math.max(0, ...t.done) + ", last 24 h " + t.done.slice(-24).reduce((a, b) => a + b, 0);
  }

  // The chart's axes in HTML beside the stretched SVG: the days along the bottom, each at the
  // midnight it starts with (local time), and the tallest bar's count with 0 on the left.
  function drawAxes(first, hours, peak) {
    const axis = document.getElementById("throughput-axis");
    axis.replaceChildren();
    for (let i = 0; i < hours; i++) {
      const at = new Date(first + i * 3600000);
      if (at.getHours() !== 0) continue;
      const day = el("span", "", at.toLocaleDateString([], {weekday: "short", day: "numeric"}));
      day.style.left = (100 * i / hours) + "%";
      axis.append(day);
    }
    document.getElementById("throughput-scale").replaceChildren(el("span", "", peak + "/h"), el("span", "", "0"));
  }

  // --- Filters, kept in the URL --------------------------------------------------------------

  function field(name) { return document.getElementById("filter-" + name); }

  function filters() {
    const params = new URLSearchParams();
    FILTERS.forEach(function (name) {
      let value = field(name).value.trim();
      if (name === "label") value = value.toLowerCase();
      if (value) params.set(name, value);
    });
    return params;
  }

  function query(extra) {
    const params = filters();
    if (version !== null) params.set("since", version);
    Object.entries(extra || {}).forEach(([k, v]) => params.set(k, v));
    return dataUrl + "?" + params.toString();
  }

  function refilter() {
    const shared = filters().toString();
    history.replaceState(null, "", location.pathname + (shared ? "?" + shared : ""));
    etag = null;
    version = null; // a new filter shows other cards: fetch them whole
    poll().catch(function () {});
  }

  // --- Acting ----------------------------------------------------------------------------------

  async function act(number, action, body) {
    const response = await fetch(taskUrl + number + "/" + action, {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: {"Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf ? csrf.value : ""},
      body: JSON.stringify(body || {}),
    });
    let answer = {};
    try { answer = await response.json(); } catch (error) { answer = {detail: "HTTP " + response.status}; }
    return {ok: response.ok, answer: answer};
  }

  // A refusal in words: the API's detail, with the task it names when there is one.
  function inWords(answer) {
    let text = answer.detail || answer.error || "Refused.";
    if (answer.fields) {
      text += " " + Object.entries(answer.fields).map(([k, v]) => k + ": " + [].concat(v).join(" ")).join("; ");
    }
    if (answer.winner && answer.winner.number) text += " (task #" + answer.winner.number + ")";
    return text;
  }

  function showRefusal(number, text) {
    const note = document.getElementById("panel-refusal");
    note.textContent = text || "";
    note.hidden = !text;
    const card = cards.get(number);
    if (card) {
      if (text) card.dataset.refusal = text; else delete card.dataset.refusal;
      const old = card.querySelector(".refusal");
      if (old) old.remove();
      if (text) card.append(el("div", "refusal", text));
    }
  }

  async function run(number, action, body) {
    const {ok, answer} = await act(number, action, body);
    if (!ok) { showRefusal(number, inWords(answer)); return false; }
    showRefusal(number, null);
    if (answer.card) fill(cardNode(number), answer.card);
    await poll({}).catch(function () {}); // where the card goes now, without waiting for the next tick
    if (openNumber === number) openPanel(number, false);
    if (action === "supersede" || action === "not-duplicate") pollPairs(false);
    return true;
  }

  function button(label, onClick, className) {
    const b = el("button", className || "", label);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }

  // A closing action asks once more on the button itself: a slip does not end a task.
  function confirmButton(label, onConfirm) {
    const b = button(label, function () {
      if (b.dataset.armed) { onConfirm(); return; }
      b.dataset.armed = "1";
      b.textContent = label + "? Click again";
      setTimeout(function () { delete b.dataset.armed; b.textContent = label; }, 4000);
    }, "danger");
    return b;
  }

  function actions(data) {
    const card = data.card;
    const box = document.getElementById("panel-actions");
    box.replaceChildren();
    const live = ["proposed", "waiting", "parked", "open", "claimed", "assigned", "in_review"].includes(card.status);
    const n = card.number;
    if (card.status === "proposed" && controls.approve) {  // SPEC §21: a person decides a proposal
      const approve = button("Approve", () => run(n, "approve", {}));
      approve.id = "act-approve";
      const refuse = confirmButton("Refuse", () => run(n, "refuse", {reason: "refused from the board"}));
      refuse.id = "act-refuse";
      box.append(group("Proposal", approve, refuse));
    }
    if (card.status === "parked" && controls.unpark) {  // SPEC §22: set back too often; a steward decides
      const unpark = button("Unpark", () => run(n, "unpark", {}));
      unpark.id = "act-unpark";
      box.append(group("Parked after " + card.setbacks + " setbacks", unpark));
    }
    if (card.slot && controls.release && data.slot_held) {
      const b = button("Release slot " + card.slot, () => run(n, "release", {}));
      b.id = "act-release";
      box.append(group("Slot", b));
    } else if (card.slot && controls.hold && !data.slot_held) {
      const b = button("Hold slot " + card.slot, () => run(n, "hold", {}));
      b.id = "act-hold";
      box.append(group("Slot", b));
    }
    if (!live) return;
    if (controls.update) {
      const prio = el("select");
      prio.id = "act-priority";
      prio.setAttribute("aria-label", "priority");
      [0, 1, 2, 3, 4].forEach(function (p) {
        const o = el("option", "", "P" + p); o.value = p; o.selected = p === card.priority; prio.append(o);
      });
      // A priority reorders everyone's queue: the change is applied by a second, named click.
      const apply = button("", () => run(n, "update", {priority: Number(prio.value)}));
      apply.id = "act-priority-apply";
      apply.hidden = true;
      prio.addEventListener("change", function () {
        apply.hidden = Number(prio.value) === card.priority;
        apply.textContent = "Set P" + prio.value + " (was P" + card.priority + ")";
      });
      const labels = el("input");
      labels.id = "act-labels";
      labels.value = card.labels.join(", ");
      labels.placeholder = "labels, comma-separated";
      labels.setAttribute("aria-label", "labels");
      const save = button("Save labels", () => run(n, "update", {
        labels: labels.value.split(",").map(s => s.trim().toLowerCase()).filter(Boolean)}));
      save.id = "act-labels-save";
      box.append(group("Priority", prio, apply), group("Labels", labels, save));
    }
    if (controls.assign && (card.status === "open")) {
      const who = el("select");
      who.id = "act-member";
      who.setAttribute("aria-label", "member to assign");
      const none = el("option", "", "choose a member…"); none.value = ""; who.append(none);
      assignable.forEach(function ([pk, name]) { const o = el("option", "", name); o.value = pk; who.append(o); });
      const go = button("Assign", () => who.value && run(n, "assign", {member: Number(who.value)}));
      go.id = "act-assign";
      box.append(group("Assign to", who, go));
    }
    if (controls.supersede) {
      const survivor = el("input");
      survivor.id = "act-survivor";
      survivor.type = "number";
      survivor.min = 1;
      survivor.placeholder = "task #";
      survivor.setAttribute("list", "survivors");
      survivor.setAttribute("aria-label", "surviving task number");
      const choices = el("datalist");
      choices.id = "survivors";
      cards.forEach(function (node, number) {
        if (number !== n && !node.closest(".col-done")) {
          const o = el("option"); o.value = number; o.label = "#" + number + " " + node.querySelector(".title").textContent;
          choices.append(o);
        }
      });
      const go = button("Supersede", () => run(n, "supersede", {surviving_task: Number(survivor.value), reason: "superseded from the board"}));
      go.id = "act-supersede";
      box.append(group("Duplicate of", survivor, choices, go));
    }
    const closing = [["withdraw", "Withdraw"], ["reject", "Reject"]].filter(([action]) => controls[action])
      .map(function ([action, label]) {
        const b = confirmButton(label, () => run(n, action, {reason: action === "withdraw" ? "withdrawn from the board"
                                                                                            : "rejected from the board"}));
        b.id = "act-" + action;
        return b;
      });
    if (closing.length) box.append(group("Close", ...closing));
  }

  function group(label, ...nodes) {
    const box = el("div", "act");
    box.append(el("span", "act-label", label), ...nodes);
    return box;
  }

  // --- The task panel --------------------------------------------------------------------------

  function section(title, items) {
    const box = el("section", "panel-section");
    box.append(el("h3", "", title));
    if (!items.length) { box.append(el("p", "hint", "none")); return box; }
    const list = el("ul");
    items.forEach(item => list.append(item));
    box.append(list);
    return box;
  }

  function taskLink(t) {
    const li = el("li");
    const a = el("a", "task-link", "#" + t.number);
    a.href = "#";
    a.addEventListener("click", function (event) { event.preventDefault(); openPanel(t.number, true); });
    li.append(a, " " + t.title + " ", el("span", "hint", t.status.replace("_", " ")));
    return li;
  }

  function renderPanel(data) {
    const card = data.card;
    document.getElementById("panel-title").textContent = "#" + card.number + " " + card.title;
    const body = document.getElementById("panel-body");
    // What a person is typing (an answer, a message) outlives the panel's redraw when the task changes.
    const typed = {};
    body.querySelectorAll("input[id]").forEach(function (input) { typed[input.id] = input.value; });
    const focused = body.contains(document.activeElement) ? document.activeElement.id : "";
    body.replaceChildren();
    const facts = document.getElementById("panel-facts");
    facts.replaceChildren();
    facts.append(el("span", "prio p" + card.priority, "P" + card.priority), " " + card.status.replace("_", " "));
    if (card.slot) facts.append(" · slot " + card.slot);
    if (card.labels.length) facts.append(" · " + card.labels.join(", "));
    if (data.creator) facts.append(" · created by " + data.creator + " " + ago(data.created_at));
    if (data.superseded_by) facts.append(" · superseded by #" + data.superseded_by);
    if (data.body) body.append(el("p", "task-body", data.body));
    body.append(section("Waits on", data.blocked_by.map(taskLink)), section("Blocks", data.blocks.map(taskLink)));
    body.append(section("Claims", data.claims.map(function (c) {
      const text = c.ended_at
        ? c.member + ", " + c.origin + " " + when(c.created_at) + ", ended " + when(c.ended_at) + " (" + c.end_reason.replace("_", " ") + ")"
        : c.member + ", " + c.origin + " " + when(c.created_at) + ", expires " + ago(c.expires_at);
      return el("li", c.ended_at ? "" : "live", text);
    })));
    body.append(section("Attempts", data.attempts.map(function (a) {
      const li = el("li", "", "Attempt " + a.number + " by " + a.member + ", " + a.state + ", " + when(a.created_at));
      if (a.result) li.append(el("blockquote", "attempt-result", a.result));
      if (a.state === "waiting" && controls.confirm) {  // SPEC §21: a person's check, from the panel
        const confirm = button("Confirm", () => run(card.number, "confirm", {attempt: a.number}));
        confirm.id = "act-confirm-" + a.number;
        const reject = confirmButton("Reject", () => run(card.number, "reject-attempt",
                                                          {attempt: a.number, reason: "rejected from the board"}));
        reject.id = "act-reject-attempt-" + a.number;
        li.append(" ", confirm, " ", reject);
      }
      if (a.checks.length) {
        const checks = el("ul");
        a.checks.forEach(c => checks.append(el("li", "", c.member + " " + (c.verdict === "confirm" ? "confirmed" : "rejected") +
          (c.reason ? ": " + c.reason : "") + ", " + when(c.created_at))));
        li.append(checks);
      }
      return li;
    })));
    if (data.questions.length) body.append(questionsSection(card, data.questions));
    body.append(threadSection(card, data.messages));
    const events = data.history.slice().reverse().map(function (e) {
      const li = el("li", "event");
      li.append(el("time", "", when(e.at)), " ", el("b", "", e.actor), " " + e.text);
      return li;
    });
    const historyBox = section("History", events);
    historyBox.id = "panel-history";
    body.append(historyBox);
    const admin = el("a", "admin-link", "Open in the admin");
    admin.href = data.admin_url;
    body.append(admin);
    Object.entries(typed).forEach(function ([id, value]) {
      const input = document.getElementById(id);
      if (input) input.value = value;
    });
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    actions(data);
  }

  // SPEC §21: a task's questions, an open one with its answer box (its options as buttons).
  function questionsSection(card, questions) {
    const items = questions.map(function (q) {
      const li = el("li", q.state === "open" ? "live question" : "question");
      li.append(el("b", "", q.asker), " asked " + q.to + " " + when(q.created_at) + ": ", el("q", "", q.body));
      if (q.state === "answered") {
        li.append(el("div", "hint", q.answered_by + " answered: " + (q.option ? q.option + (q.answer ? " (" + q.answer + ")" : "") : q.answer)));
      } else if (q.state !== "open") {
        li.append(el("div", "hint", q.state));
      } else if (controls.answer) {
        const box = el("form", "answer-box");
        const text = el("input");
        text.type = "text"; text.placeholder = "Your answer"; text.setAttribute("aria-label", "answer to question " + q.id);
        text.id = "answer-" + q.id;
        box.append(text);
        q.options.forEach(function (option) {
          const b = button(option, () => run(card.number, "answer", {question: q.id, option: option, body: text.value}));
          b.className = "option";
          box.append(b);
        });
        const send = button("Answer", () => run(card.number, "answer", {question: q.id, body: text.value}));
        send.id = "act-answer-" + q.id;
        box.append(send);
        box.addEventListener("submit", function (event) { event.preventDefault(); send.click(); });
        li.append(box);
      }
      return li;
    });
    return section("Questions", items);
  }

  // The task's thread, oldest first, and a box to write to it.
  function threadSection(card, messages) {
    const items = messages.map(function (m) {
      const li = el("li", "message");
      li.append(el("b", "", m.sender), " " + when(m.created_at) + ": " + m.body);
      return li;
    });
    const box = section("Thread", items);
    box.id = "panel-thread";
    if (controls.message) {
      const form = el("form", "message-box");
      const text = el("input");
      text.type = "text"; text.placeholder = "Write to the task's thread"; text.id = "message-text";
      text.setAttribute("aria-label", "message to the task's thread");
      const send = button("Send", function () {
        if (!text.value.trim()) return;
        const body = text.value;
        text.value = "";  // sent: the redraw after it starts with an empty box
        run(card.number, "message", {body: body});
      });
      send.id = "act-message";
      form.append(text, send);
      form.addEventListener("submit", function (event) { event.preventDefault(); send.click(); });
      box.append(form);
    }
    return box;
  }

  async function openPanel(number, focus) {
    const first = openNumber !== number;
    openNumber = number;
    panel.hidden = false;
    document.body.classList.add("panel-open");
    if (first) showRefusal(number, cards.get(number) && cards.get(number).dataset.refusal || null);
    try {
      const response = await fetch(taskUrl + number, {headers: {"Accept": "application/json"}, credentials: "same-origin",
                                                      cache: "no-store"});
      const data = await response.json();
      if (openNumber !== number) return;
      if (!response.ok) { showRefusal(number, inWords(data)); return; }
      renderPanel(data);
    } catch (error) {
      showRefusal(number, "The server did not answer: " + error.message);
    }
    if (focus) panel.focus();
  }

  function closePanel() {
    panel.hidden = true;
    openNumber = null;
    document.body.classList.remove("panel-open");
    if (openedFrom && document.contains(openedFrom)) openedFrom.focus();
  }

  // --- Likely duplicates (SPEC §16) ----------------------------------------------------------

  function setDuplicates(pairs) {
    const strip = document.getElementById("duplicates");
    const list = document.getElementById("duplicate-pairs");
    list.replaceChildren();
    strip.hidden = pairs.length === 0;
    pairs.forEach(function (pair) {
      const [a, b] = pair.tasks;
      const item = el("li", "pair");
      item.append(el("span", "score", pair.score.toFixed(2)));
      [a, b].forEach(function (t) { item.append(el("span", "task", "#" + t.id + " " + t.title)); });
      const buttons = el("span", "actions");
      if (controls.supersede) {
        // Keep #a: #b is superseded by #a, and the other way round.
        buttons.append(button("Keep #" + a.id, () => run(b.id, "supersede", {surviving_task: a.id, reason: "likely duplicate"})),
                       button("Keep #" + b.id, () => run(a.id, "supersede", {surviving_task: b.id, reason: "likely duplicate"})));
      }
      if (controls["not-duplicate"]) buttons.append(button("Not a duplicate", () => run(a.id, "not-duplicate", {task: b.id})));
      item.append(buttons);
      list.append(item);
    });
  }

  async function pollPairs(again) {
    const url = document.getElementById("duplicates").dataset.pairs;
    try {
      const response = await fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin",
                                         cache: "no-store"});
      if (response.ok) setDuplicates((await response.json()).duplicates);
    } catch (error) { /* the cards' state line says when the server is away */ }
    if (again !== false) setTimeout(pollPairs, PAIRS_MS);
  }

  // --- Polling -------------------------------------------------------------------------------

  function apply(data) {
    setFigures(data.summary);
    drawThroughput(data.throughput);
    Object.entries(data.cards).forEach(function ([number, card]) {
      const known = cards.has(Number(number));
      const node = cardNode(Number(number));
      if (known) {
        node.classList.remove("flash");
        void node.offsetWidth; // restart the highlight
        node.classList.add("flash");
      }
      fill(node, card);
      if (openNumber === Number(number) && version !== null) openPanel(openNumber, false);
    });
    const shown = new Set();
    const missing = [];
    COLUMNS.forEach(function (column) {
      const list = document.getElementById("cards-" + column);
      const wanted = data.columns[column].cards;
      let cursor = list.firstElementChild;
      wanted.forEach(function (number) {
        shown.add(number);
        const node = cards.get(number);
        if (!node) { missing.push(number); return; }
        if (node !== cursor) list.insertBefore(node, cursor); // moves it, same element
        else cursor = cursor.nextElementSibling;
      });
      while (cursor) { const next = cursor.nextElementSibling; if (!shown.has(Number(cursor.dataset.number))) cursor.remove(); cursor = next; }
      document.getElementById("count-" + column).textContent = data.columns[column].total;
      const more = document.getElementById("more-" + column);
      const rest = data.columns[column].total - wanted.length;
      more.hidden = rest <= 0;
      more.textContent = rest > 0 ? "and " + rest + " more" : "";
    });
    cards.forEach(function (node, number) { if (!shown.has(number)) { node.remove(); cards.delete(number); } });
    version = data.version;
    return missing;
  }

  async function poll(extra) {
    const headers = {"Accept": "application/json"};
    if (etag && !extra) headers["If-None-Match"] = etag;
    const response = await fetch(query(extra), {headers: headers, credentials: "same-origin", cache: "no-store"});
    if (response.status === 304) return;
    const error = document.getElementById("filter-error");
    if (response.status === 422) {
      const answer = await response.json();
      error.textContent = inWords(answer);
      error.hidden = false;
      return;
    }
    error.hidden = true;
    if (!response.ok) throw new Error("board data: HTTP " + response.status);
    if (!extra || !Object.keys(extra).length) etag = response.headers.get("ETag");
    const missing = apply(await response.json());
    if (missing.length && !(extra && extra.numbers)) await poll({numbers: missing.join(",")});
  }

  async function tick() {
    const state = document.getElementById("live-state");
    try {
      await poll();
      state.textContent = "live";
      state.classList.remove("stale");
    } catch (error) {
      state.textContent = "reconnecting… (" + error.message + ")";
      state.classList.add("stale");
    }
    refreshAges();
    setTimeout(tick, POLL_MS);
  }

  // --- Keyboard and clicks ---------------------------------------------------------------------

  function neighbour(card, key) {
    if (key === "ArrowDown" || key === "j") return card.nextElementSibling;
    if (key === "ArrowUp" || key === "k") return card.previousElementSibling;
    const columns = COLUMNS.map(c => document.getElementById("cards-" + c)).filter(list => list.children.length);
    const here = columns.indexOf(card.parentElement);
    const there = columns[here + (key === "ArrowRight" || key === "l" ? 1 : -1)];
    if (!there) return null;
    const index = Array.prototype.indexOf.call(card.parentElement.children, card);
    return there.children[Math.min(index, there.children.length - 1)];
  }

  board.addEventListener("click", function (event) {
    const card = event.target.closest(".card");
    if (!card || event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    openedFrom = card;
    openPanel(Number(card.dataset.number), true);
  });

  board.addEventListener("keydown", function (event) {
    const card = event.target.closest(".card");
    if (!card) return;
    if (["ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight", "j", "k", "h", "l"].includes(event.key)) {
      const next = neighbour(card, event.key);
      if (next) { event.preventDefault(); next.focus(); }
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) { closePanel(); return; }
    const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
    if (event.key === "/" && !typing) { event.preventDefault(); field("q").focus(); }
  });

  document.getElementById("panel-close").addEventListener("click", closePanel);
  FILTERS.forEach(name => field(name).addEventListener("change", refilter));
  document.getElementById("filters").addEventListener("submit", function (event) { event.preventDefault(); refilter(); });

  // A shared view: the filters come from the page's URL.
  const shared = new URLSearchParams(location.search);
  FILTERS.forEach(function (name) { if (shared.get(name)) field(name).value = shared.get(name); });
  tick();
  pollPairs();
})();
