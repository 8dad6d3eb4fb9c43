"use strict";
(function () {
  const table = document.getElementById("items-table");
  if (!table) {
    return;
  }
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  const texts = rows.map((row) => row.textContent.toLowerCase());
  const search = document.getElementById("search");
  const system = document.getElementById("system-filter");
  const disagree = document.getElementById("disagree-filter");
  const counter = document.getElementById("shown-count");

  function filter() {
    const query = search.value.trim().toLowerCase();
    const wanted = system ? system.value : "";
    let shown = 0;
    rows.forEach((row, index) => {
      const visible =
        (query === "" || texts[index].includes(query)) &&
        (wanted === "" || row.dataset.system === wanted) &&
        (!disagree.checked || row.dataset.disagree === "1");
      row.hidden = !visible;
      if (visible) {
        shown += 1;
      }
    });
    counter.textContent = shown + " of " + rows.length + " rows shown";
  }

  function sortBy(header, index) {
    const ascending = header.getAttribute("aria-sort") !== "ascending";
    for (const other of table.tHead.rows[0].cells) {
      other.removeAttribute("aria-sort");
    }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const numeric = header.dataset.type === "number";
    const key = (row) => {
      const cell = row.cells[index];
      const value = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent;
      return numeric ? Number.parseFloat(value) : value.toLowerCase();
    };
    const order = Array.from(body.rows).map((row, position) => ({ row, position, key: key(row) }));
    order.sort((a, b) => {
      let result;
      if (numeric) {
        result = (Number.isNaN(a.key) ? -Infinity : a.key) - (Number.isNaN(b.key) ? -Infinity : b.key);
      } else {
        result = a.key.localeCompare(b.key);
      }
      return (ascending ? result : -result) || a.position - b.position;
    });
    body.append(...order.map((entry) => entry.row));
  }

  Array.from(table.tHead.rows[0].cells).forEach((header, index) => {
    const button = header.querySelector("button");
    if (button) {
      button.addEventListener("click", () => sortBy(header, index));
    }
  });
  search.addEventListener("input", filter);
  disagree.addEventListener("change", filter);
  if (system) {
    system.addEventListener("change", filter);
  }
  filter();
})();
