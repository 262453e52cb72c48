// Input errors: a banner saying what is wrong, and the field it is about marked invalid until the
// next intent goes through or the person types into it. Below the lab and the intents, which
// both check what was typed.
import { t } from '../../common/i18n.js';
import { clearBanner, showBanner } from '../view/banner-view.js';
import { state, ui } from './state.js';

function inputError(message, field) {
  const banner = showBanner(ui.banners, { kind: 'error', key: 'input', title: t(state.lang, 'banner.notDone'), message });
  clearInvalid();
  if (!field) return;
  // The field says it is invalid, and why (the banner's message), to a screen reader too.
  const text = banner.querySelector('.banner-message');
  text.id = 'input-problem';
  field.setAttribute('aria-invalid', 'true');
  field.setAttribute('aria-describedby', text.id);
  invalidField = field;
  field.focus();
}

let invalidField = null;

/** The input error is over: the field is no longer marked, and its banner goes. */
function clearInput() {
  clearBanner(ui.banners, 'input');
  clearInvalid();
}

function clearInvalid() {
  if (!invalidField) return;
  invalidField.removeAttribute('aria-invalid');
  invalidField.removeAttribute('aria-describedby');
  invalidField = null;
}

export { inputError, invalidField, clearInput };
