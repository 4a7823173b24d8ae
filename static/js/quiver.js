// Console behaviour that would otherwise be inline handlers (the CSP refuses those).
// <select data-autosubmit> submits its form when the choice changes.
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.dataset.autosubmit !== undefined && field.form) {
    field.form.submit();
  }
});
