// Console behaviour that would otherwise be inline handlers (the CSP refuses those).
// <select data-autosubmit> submits its form when the choice changes.
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.dataset.autosubmit !== undefined && field.form) {
    field.form.submit();
  }
});

// Tool list: "select every tool on this page", and the count of ticked rows
// (ticking a row also picks "selected" as the bulk edit's scope).
document.addEventListener("change", (event) => {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || box.type !== "checkbox") return;
  const selectAll = box.dataset.selectAll !== undefined;
  if (!selectAll && box.name !== "ids") return;
  const rows = document.querySelectorAll('input[name="ids"][form="tool-bulk"]');
  if (selectAll) rows.forEach((row) => { row.checked = box.checked; });
  const ticked = Array.from(rows).filter((row) => row.checked).length;
  const counter = document.querySelector("[data-selected-count]");
  if (counter) counter.textContent = String(ticked);
  const scope = document.querySelector('#tool-bulk input[name="scope"][value="selected"]');
  if (scope && ticked) scope.checked = true;
});

// <button data-copy="#id"> copies that element's text and says so next to itself.
document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  if (!button) return;
  event.preventDefault();
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const text = source.textContent;
  const note = button.parentElement.querySelector(".copied");
  const done = (message) => { if (note) note.textContent = message; };
  const fallback = () => {
    const area = document.createElement("textarea");
    area.value = text;
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    done(ok ? "Copied." : "Select the text below and copy it.");
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => done(`Copied ${button.textContent.replace("Copy as ", "")}.`), fallback);
  } else {
    fallback();
  }
});
