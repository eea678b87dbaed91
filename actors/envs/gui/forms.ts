/**
 * Form pages: a checkout form (text, a custom listbox, a number field, a checkbox, radios) and a
 * sign-up form (text and password fields, radios, checkboxes) that validate on submit. The
 * evaluator scores what was submitted, so filling the fields without submitting earns nothing.
 */
import {
  click,
  type GuiDraft,
  int,
  type OracleCall,
  oracle,
  pick,
  type Rand,
  sample,
  typeInto,
} from './drafts.js';
import { esc, js, renderPage } from './pages.js';

export const FIRST_NAMES = [
  'Ada',
  'Bram',
  'Chiara',
  'Dmitri',
  'Elif',
  'Farid',
  'Greta',
  'Hiro',
  'Ines',
  'Jonas',
  'Kaja',
  'Lucian',
  'Mira',
  'Nils',
  'Oona',
  'Pavel',
] as const;
export const LAST_NAMES = [
  'Lindqvist',
  'Okafor',
  'Moreau',
  'Tanaka',
  'Kowalski',
  'Haddad',
  'Silva',
  'Brennan',
  'Novak',
  'Varga',
] as const;
const COUNTRIES = [
  'Austria',
  'Brazil',
  'Canada',
  'Denmark',
  'Estonia',
  'Ghana',
  'Japan',
  'Norway',
  'Portugal',
] as const;
const SHIPPING = ['Standard', 'Express', 'Overnight'] as const;
const PLANS = ['Free', 'Pro', 'Team'] as const;
const WORDS = ['amber', 'falcon', 'harbor', 'quartz', 'meadow', 'cobalt', 'willow', 'ember'] as const;

function checkout(rand: Rand): GuiDraft {
  const name = `${pick(rand, FIRST_NAMES)} ${pick(rand, LAST_NAMES)}`;
  const country = pick(rand, COUNTRIES);
  const quantity = int(rand, 2, 9);
  const giftWrap = rand() < 0.5;
  const shipping = pick(rand, SHIPPING);
  const options = COUNTRIES.map(
    (c, i) => `<li role="option" id="country-opt-${i}" aria-selected="false">${esc(c)}</li>`,
  ).join('');
  const html = renderPage({
    title: 'Checkout',
    css: `
.select { position: relative; display: inline-block; }
#country { width: 280px; text-align: left; }
#country-list { position: absolute; left: 0; top: 34px; z-index: 5; width: 280px; margin: 0; padding: 4px 0; list-style: none; background: #fff; border: 1px solid #8c959f; border-radius: 6px; box-shadow: 0 4px 12px rgba(0,0,0,.2); }
#country-list li { padding: 3px 12px; cursor: pointer; }
#country-list li:hover, #country-list li.active { background: #ddf4ff; }
fieldset label { margin-right: 16px; }`,
    body: `<main>
<h1>Checkout</h1>
<form id="order" novalidate>
  <div class="field"><label for="name">Full name</label><input id="name" type="text" autocomplete="off"></div>
  <div class="field"><span class="label" id="country-label">Country</span><div class="select">
    <button type="button" id="country" role="combobox" aria-label="Country" aria-haspopup="listbox" aria-expanded="false" aria-controls="country-list">Choose a country</button>
    <ul id="country-list" role="listbox" aria-label="Countries" hidden>${options}</ul>
  </div></div>
  <div class="field"><label for="qty">Quantity</label><input id="qty" type="number" min="1" max="20" value="1"></div>
  <div class="field"><label><input id="gift" type="checkbox"> Gift wrap</label></div>
  <fieldset><legend>Shipping</legend>${SHIPPING.map(
    (s, i) => `<label><input type="radio" name="ship" value="${s}"${i === 0 ? ' checked' : ''}> ${s}</label>`,
  ).join('')}</fieldset>
  <button type="submit" class="primary">Place order</button>
  <p id="status" class="status" role="status"></p>
</form>
</main>`,
    script: `
const COUNTRIES = ${js(COUNTRIES)};
const state = { submission: null };
window.__taskState = state;
const $ = (id) => document.getElementById(id);
const combo = $('country');
const list = $('country-list');
const options = [...list.querySelectorAll('[role=option]')];
let country = null;
let active = -1;
function mark() {
  options.forEach((o, i) => o.classList.toggle('active', i === active));
  if (active >= 0) combo.setAttribute('aria-activedescendant', options[active].id);
}
function open(show) {
  list.hidden = !show;
  combo.setAttribute('aria-expanded', String(show));
  if (show) { active = Math.max(0, COUNTRIES.indexOf(country)); mark(); }
  else combo.removeAttribute('aria-activedescendant');
}
function choose(i) {
  country = COUNTRIES[i];
  combo.textContent = country;
  options.forEach((o, j) => o.setAttribute('aria-selected', String(j === i)));
  open(false);
  combo.focus();
}
combo.addEventListener('click', () => open(list.hidden));
combo.addEventListener('keydown', (e) => {
  if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
    e.preventDefault();
    if (list.hidden) open(true);
    else { active = (active + (e.key === 'ArrowDown' ? 1 : options.length - 1)) % options.length; mark(); }
  } else if ((e.key === 'Enter' || e.key === ' ') && !list.hidden) {
    e.preventDefault();
    choose(active);
  } else if (e.key === 'Escape') open(false);
});
options.forEach((o, i) => o.addEventListener('click', () => choose(i)));
document.addEventListener('click', (e) => {
  if (!list.hidden && !e.target.closest('.select')) open(false);
});
function status(kind, text) { const s = $('status'); s.className = 'status ' + kind; s.textContent = text; }
$('order').addEventListener('submit', (e) => {
  e.preventDefault();
  const name = $('name').value.trim();
  const quantity = Number($('qty').value);
  const errors = [];
  if (!name) errors.push('Enter your full name.');
  if (!country) errors.push('Choose a country.');
  if (!Number.isInteger(quantity) || quantity < 1 || quantity > 20) errors.push('The quantity must be a whole number from 1 to 20.');
  if (errors.length > 0) { status('error', errors.join(' ')); return; }
  const shipping = document.querySelector('input[name=ship]:checked').value;
  state.submission = { name, country, quantity, giftWrap: $('gift').checked, shipping };
  status('ok', 'Order placed: ' + quantity + ' item(s) to ' + country + ', ' + shipping + ' shipping.');
});`,
  });
  const details: OracleCall[] = [typeInto('spinbutton "Quantity"', String(quantity))];
  if (giftWrap) details.push(click('checkbox "Gift wrap"'));
  if (shipping !== 'Standard') details.push(click(`radio "${shipping}"`));
  return {
    kind: 'form',
    instruction:
      `Fill in the checkout form: full name "${name}", country ${country}, quantity ${quantity}, ` +
      `${giftWrap ? 'with' : 'without'} gift wrap, ${shipping} shipping. Then place the order.`,
    html,
    goal: { state: { submission: { name, country, quantity, giftWrap, shipping } } },
    oracle: oracle(
      [typeInto('textbox "Full name"', name), click('combobox "Country"')],
      [click(`option "${country}"`)],
      details,
      [click('button "Place order"')],
    ),
  };
}

function signup(rand: Rand): GuiDraft {
  const [first, last] = [pick(rand, FIRST_NAMES), pick(rand, LAST_NAMES)];
  const email = `${first.toLowerCase()}.${last.toLowerCase()}@example.org`;
  const username = `${first.toLowerCase()}_${int(rand, 10, 99)}`;
  const [w1, w2] = sample(rand, WORDS, 2);
  const password = `${w1}-${w2[0].toUpperCase()}${w2.slice(1)}-${int(rand, 10, 99)}`;
  const plan = pick(rand, PLANS);
  const newsletter = rand() < 0.5;
  const html = renderPage({
    title: 'Create your account',
    css: 'fieldset label { margin-right: 16px; } .check { margin: 0 0 8px; }',
    body: `<main>
<h1>Create your account</h1>
<form id="signup" novalidate>
  <div class="field"><label for="email">Email</label><input id="email" type="email" autocomplete="off"></div>
  <div class="field"><label for="username">Username</label><input id="username" type="text" autocomplete="off"></div>
  <div class="field"><label for="password">Password</label><input id="password" type="password" autocomplete="off"></div>
  <div class="field"><label for="confirm">Confirm password</label><input id="confirm" type="password" autocomplete="off"></div>
  <fieldset><legend>Plan</legend>${PLANS.map(
    (p, i) => `<label><input type="radio" name="plan" value="${p}"${i === 0 ? ' checked' : ''}> ${p}</label>`,
  ).join('')}</fieldset>
  <div class="check"><label><input id="news" type="checkbox"> Send me product news</label></div>
  <div class="check"><label><input id="terms" type="checkbox"> I accept the terms of service</label></div>
  <button type="submit" class="primary">Create account</button>
  <p id="status" class="status" role="status"></p>
</form>
</main>`,
    script: `
const state = { submission: null };
window.__taskState = state;
const $ = (id) => document.getElementById(id);
function status(kind, text) { const s = $('status'); s.className = 'status ' + kind; s.textContent = text; }
$('signup').addEventListener('submit', (e) => {
  e.preventDefault();
  const email = $('email').value.trim();
  const username = $('username').value.trim();
  const password = $('password').value;
  const errors = [];
  if (!/^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$/.test(email)) errors.push('Enter a valid email address.');
  if (!/^[a-z0-9_]{3,20}$/.test(username)) errors.push('A username has 3 to 20 lowercase letters, digits or underscores.');
  if (password.length < 8) errors.push('The password needs at least 8 characters.');
  else if ($('confirm').value !== password) errors.push('The passwords do not match.');
  if (!$('terms').checked) errors.push('Accept the terms of service.');
  if (errors.length > 0) { status('error', errors.join(' ')); return; }
  const plan = document.querySelector('input[name=plan]:checked').value;
  state.submission = { email, username, password, plan, newsletter: $('news').checked };
  status('ok', 'Account ' + username + ' created on the ' + plan + ' plan.');
});`,
  });
  const choices: OracleCall[] = [];
  if (plan !== 'Free') choices.push(click(`radio "${plan}"`));
  if (newsletter) choices.push(click('checkbox "Send me product news"'));
  choices.push(click('checkbox "I accept the terms of service"'));
  return {
    kind: 'form',
    instruction:
      `Sign up with email "${email}", username "${username}" and password "${password}" (enter it in both ` +
      `password fields). Choose the ${plan} plan, ${newsletter ? 'subscribe to' : 'do not subscribe to'} ` +
      'product news, accept the terms of service and create the account.',
    html,
    goal: { state: { submission: { email, username, password, plan, newsletter } } },
    oracle: oracle(
      [
        typeInto('textbox "Email"', email),
        typeInto('textbox "Username"', username),
        typeInto('textbox "Password"', password),
        typeInto('textbox "Confirm password"', password),
      ],
      choices,
      [click('button "Create account"')],
    ),
  };
}

export function formPage(rand: Rand, index: number): GuiDraft {
  return index % 2 === 0 ? checkout(rand) : signup(rand);
}
