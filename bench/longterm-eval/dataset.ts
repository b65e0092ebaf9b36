/**
 * The long-term memory evaluation set (issue 10), generated from a fixed seed: six users' chats
 * over 2025, eight sessions each, mostly filler, with facts planted in them and questions that
 * name the messages holding their evidence. Categories:
 *   direct        the question shares the message's words (a control: every retriever should do well);
 *   paraphrase    other words than the message (synonyms, other forms of a word);
 *   contradiction a value that changed later: the newer message must rank first (`stale` is the old one);
 *   multi-hop     two messages linked through an entity ("my sister" → her name → her city);
 *   temporal      "where did I live in May": asked with `asOf`, the evidence is what held then.
 * Split: users 0–2 are the dev split, users 3–5 the held-out split; the held-out users draw names,
 * places and question wordings from pools the dev users never see (odd vs even template slots), so
 * a retrieval change tuned to the dev questions' strings does not carry over.
 * Facts: the triples an extraction would record from the planted messages (provenance: that
 * message); paraphrase facts use the message's own words, so facts add no synonyms.
 */
import { prng } from '../prng';

export type Category = 'direct' | 'paraphrase' | 'contradiction' | 'multi-hop' | 'temporal';
export type Split = 'dev' | 'heldout';

export interface EvalMessage {
  id: string;
  role: 'user' | 'assistant';
  text: string;
  at: string;
}
export interface EvalConversation {
  sessionId: string;
  title: string;
  messages: EvalMessage[];
}
export interface EvalFact {
  subject: string;
  predicate: string;
  object: string;
  text: string;
  messageId: string;
  sessionId: string;
  validFrom: string;
}
export interface EvalQuestion {
  id: string;
  userId: string;
  split: Split;
  category: Category;
  query: string;
  /** Message ids holding the evidence (multi-hop: all are needed). */
  evidence: string[];
  /** Contradiction: the superseded statement, which must not come first. */
  stale?: string[];
  asOf?: string;
}
export interface EvalUser {
  userId: string;
  split: Split;
  conversations: EvalConversation[];
  facts: EvalFact[];
}
export interface EvalSet {
  seed: number;
  users: EvalUser[];
  questions: EvalQuestion[];
}

// Pools: [dev values..., held-out values...] are disjoint halves.
const POOLS = {
  city: [
    ['Lyon', 'Porto', 'Leeds', 'Graz', 'Bergen', 'Turin', 'Ghent', 'Malmo'],
    ['Seville', 'Krakow', 'Dundee', 'Basel', 'Tampere', 'Bologna', 'Utrecht', 'Aarhus'],
  ],
  employer: [
    ['Northwind', 'Globex', 'Initech', 'Vandelay', 'Hooli', 'Acme Labs'],
    ['Umbrella Works', 'Stark Freight', 'Wonka Foods', 'Cyberdyne', 'Soylent', 'Tyrell Systems'],
  ],
  sibling: [
    ['Nora', 'Ines', 'Marta', 'Lena'],
    ['Greta', 'Olga', 'Hanna', 'Yara'],
  ],
  brother: [
    ['Tomas', 'Pavel', 'Henrik', 'Luca'],
    ['Anton', 'Felix', 'Milan', 'Emil'],
  ],
  friend: [
    ['Dario', 'Kofi', 'Ravi', 'Samir'],
    ['Jonas', 'Mateo', 'Arjun', 'Nikolai'],
  ],
  manager: [
    ['Priya', 'Helen', 'Sofia', 'Agnes'],
    ['Chiara', 'Ruth', 'Elif', 'Maren'],
  ],
  job: [
    ['pharmacist', 'architect', 'paramedic', 'librarian'],
    ['veterinarian', 'carpenter', 'translator', 'pilot'],
  ],
  pet: [
    ['Biscuit', 'Pepper', 'Mochi', 'Juniper'],
    ['Pickle', 'Waffles', 'Clover', 'Nugget'],
  ],
  game: [
    ['Azul', 'Carcassonne', 'Catan', 'Patchwork'],
    ['Wingspan', 'Splendor', 'Ticket to Ride', 'Dixit'],
  ],
  trip: [
    ['Iceland', 'Japan', 'Morocco', 'Peru'],
    ['Vietnam', 'Norway', 'Chile', 'Jordan'],
  ],
  car: [
    ['a red Fiat Panda', 'an old Volvo estate', 'a Skoda Octavia', 'a Toyota Yaris'],
    ['a Renault Clio', 'a Mazda MX-5', 'a Ford Fiesta', 'a Kia Niro'],
  ],
};

/** Sentences with nothing to remember, many sharing the evidence's common words on purpose. */
const FILLER = [
  'Can you suggest a recipe for a quick weeknight dinner?',
  'I watched a documentary about deep sea creatures last night, it was fascinating.',
  'What is a good way to keep basil alive on a windowsill?',
  'Remind me how compound interest works, I always forget.',
  'The weather has been strange this week, sunny one day and then hail.',
  'I need a gift idea for a colleague who is leaving the team.',
  'Do you know any live music venues that are good for a small birthday?',
  'Work was busy today, lots of meetings and not much else.',
  'Could you help me write a polite email declining an invitation?',
  'My neighbour keeps parking in front of our garage, how should I bring it up?',
  'I am trying to read more books this year, any short novels you recommend?',
  'How long should I boil an egg for a soft yolk?',
  "We played a new board game at a friend's place and it went on for hours.",
  'I keep waking up at 5am, any tips for sleeping longer?',
  'What is the difference between a latte and a flat white?',
  'Is it worth learning a language with an app, or is a class better?',
  'I found an old photo album from when we lived with my grandparents.',
  'My phone battery drains so fast lately, should I replace it?',
  'The train was late again this morning, third time this week.',
  'Any ideas for a picnic menu that travels well?',
  'I started a puzzle with a thousand pieces and it is mostly sky.',
  'How do I get coffee stains out of a white shirt?',
  'We are thinking about repainting the living room, maybe a soft green.',
  'What are some stretching exercises after a long day at a desk?',
  'A friend of mine recommended a podcast about history, I might try it.',
  'Our team had a planning day at work and it ran long.',
  'I need to renew my passport before any trip next year.',
  'Can you explain how to split a restaurant bill fairly with tips?',
  'Our street is having a flea market on Sunday.',
  'I tried baking sourdough and it came out flat as a pancake.',
  'Which houseplants are safe to keep around a dog or a cat?',
  'The city is doing roadworks right outside our building.',
];
const REPLIES = [
  'That sounds great! Let me know if you want more ideas.',
  'Good question. Here is a short overview you might find useful.',
  'I can help with that. A few options come to mind.',
  'Happy to help. Tell me a bit more and I can narrow it down.',
  'That makes sense. Many people find the same thing.',
  'Noted. Is there anything else you would like to go over?',
  'Here are three suggestions, from simplest to most involved.',
  'Sure, that is a common situation and there are easy fixes.',
];

/** Session dates over 2025 (the temporal questions ask between them). */
const SESSION_DAYS = ['2025-01-10', '2025-02-14', '2025-03-12', '2025-04-20', '2025-06-03', '2025-07-15', '2025-09-09', '2025-11-02'];
const USERS = 6;
const MESSAGES_PER_SESSION = 26;

type Pick2 = readonly [string, string];

export function generateEvalSet(seed = 20251): EvalSet {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const users: EvalUser[] = [];
  const questions: EvalQuestion[] = [];

  for (let u = 0; u < USERS; u++) {
    const split: Split = u < USERS / 2 ? 'dev' : 'heldout';
    const side = split === 'dev' ? 0 : 1;
    const slot = u % (USERS / 2);
    const userId = `eval-user-${u}`;
    // Pool values: distinct per user within a split.
    const value = (pool: keyof typeof POOLS, offset = 0) => {
      const xs = POOLS[pool][side] as string[];
      return xs[(slot * 2 + offset) % xs.length] as string;
    };
    const phr = (p: Pick2) => p[side];
    const sisterNotBrother = slot % 2 === 0;
    const sib = sisterNotBrother ? 'sister' : 'brother';
    const S = sisterNotBrother ? value('sibling') : value('brother');
    const pron = sisterNotBrother ? 'she' : 'he';
    const F = value('friend');
    const M = value('manager');
    const p = {
      city0: value('city'),
      city1: value('city', 1),
      siblingCity: value('city', 5),
      emp0: value('employer'),
      emp1: value('employer', 1),
      job: value('job'),
      pet: value('pet'),
      game: value('game'),
      trip0: value('trip'),
      trip1: value('trip', 1),
      car0: value('car'),
      car1: value('car', 1),
      managerFrom: value('city', 3),
    };

    const planted = new Map<number, { text: string; key: string; fact?: Omit<EvalFact, 'messageId' | 'sessionId' | 'validFrom'> }[]>();
    const plant = (session: number, key: string, text: string, fact?: Omit<EvalFact, 'messageId' | 'sessionId' | 'validFrom'>) => {
      const list = planted.get(session) ?? [];
      list.push({ text, key, ...(fact ? { fact } : {}) });
      planted.set(session, list);
    };
    const self = (predicate: string, object: string, text: string) => ({ subject: 'user', predicate, object, text });
    plant(
      0,
      'city0',
      phr([`I live in ${p.city0}, in a flat near the river.`, `Home for me is ${p.city0} these days, a small place by the station.`]),
      self('lives in', p.city0, `The user lives in ${p.city0}.`),
    );
    plant(
      0,
      'game',
      phr([`My favourite board game is ${p.game}, I could play it every weekend.`, `Honestly ${p.game} is my favourite board game of all time.`]),
      self('favourite board game is', p.game, `The user's favourite board game is ${p.game}.`),
    );
    plant(1, 'emp0', phr([`I work at ${p.emp0} in the operations team.`, `My employer is ${p.emp0}, I am in their finance department.`]), self('works at', p.emp0, `The user works at ${p.emp0}.`));
    plant(1, 'sibling', phr([`My ${sib} is called ${S}, ${pron} is two years older than me.`, `I have a younger ${sib}, ${S}.`]), self(`has ${sib}`, S, `The user's ${sib} is ${S}.`));
    plant(
      1,
      'car0',
      phr([`I drive ${p.car0}, it is small but reliable.`, `My car is ${p.car0}, good enough for the city.`]),
      self('drives', p.car0.replace(/^(a|an) /, ''), `The user drives ${p.car0}.`),
    );
    plant(
      1,
      'hobby',
      phr([`I have been practising the cello every evening.`, `Lately I spend my evenings knitting scarves.`]),
      self(phr(['practises', 'spends evenings']), phr(['the cello', 'knitting scarves']), phr(['The user practises the cello.', 'The user spends evenings knitting scarves.'])),
    );
    plant(
      2,
      'trip0',
      phr([`I am planning a trip to ${p.trip0} for the summer holidays.`, `We booked flights to ${p.trip0}, leaving in July.`]),
      self('plans a trip to', p.trip0, `The user plans a trip to ${p.trip0}.`),
    );
    plant(
      2,
      'friend',
      phr([`My best friend ${F} is coming over for dinner on Friday.`, `${F} has been my closest friend since school.`]),
      self(phr(['best friend', 'closest friend']), F, `The user's ${phr(['best friend', 'closest friend'])} is ${F}.`),
    );
    plant(3, 'siblingJob', phr([`${S} just got a job as a ${p.job}.`, `${S} qualified as a ${p.job} last week.`]), {
      subject: S,
      predicate: phr(['works as', 'qualified as']),
      object: p.job,
      text: `${S} ${phr(['works as', 'qualified as'])} a ${p.job}.`,
    });
    plant(
      3,
      'allergy',
      phr([`Shellfish makes me break out in hives, so no prawns for me.`, `Peanuts give me a terrible rash, I avoid them completely.`]),
      self(phr(['breaks out in hives from', 'gets a rash from']), phr(['shellfish', 'peanuts']), phr(['Shellfish makes the user break out in hives.', 'Peanuts give the user a rash.'])),
    );
    plant(4, 'siblingCity', phr([`${S} moved to ${p.siblingCity} last month, ${pron} loves the old town.`, `${S} has settled in ${p.siblingCity} now, ${pron} rents a flat by the park.`]), {
      subject: S,
      predicate: phr(['moved to', 'settled in']),
      object: p.siblingCity,
      text: `${S} ${phr(['moved to', 'settled in'])} ${p.siblingCity}.`,
    });
    plant(
      4,
      'manager',
      phr([`My new manager is ${M}, she seems fair so far.`, `I report to ${M} now, she runs our department.`]),
      self(phr(['manager is', 'reports to']), M, `The user's manager is ${M}.`),
    );
    plant(
      4,
      'diet',
      phr([`I stopped eating meat at the start of the year.`, `I gave up dairy completely a few months ago.`]),
      self(phr(['stopped eating', 'gave up']), phr(['meat', 'dairy']), phr(['The user stopped eating meat.', 'The user gave up dairy.'])),
    );
    plant(5, 'pet', phr([`${F} adopted a greyhound and named it ${p.pet}.`, `${F} got a rescue puppy, ${p.pet}, from the shelter.`]), {
      subject: F,
      predicate: phr(['adopted a greyhound named', 'got a rescue puppy named']),
      object: p.pet,
      text: `${F} ${phr(['adopted a greyhound named', 'got a rescue puppy named'])} ${p.pet}.`,
    });
    plant(5, 'managerFrom', phr([`${M} grew up in ${p.managerFrom}, she told us at lunch.`, `${M} is originally from ${p.managerFrom}.`]), {
      subject: M,
      predicate: phr(['grew up in', 'is originally from']),
      object: p.managerFrom,
      text: `${M} ${phr(['grew up in', 'is originally from'])} ${p.managerFrom}.`,
    });
    plant(
      5,
      'runner',
      phr([`I ran my first half marathon on Sunday!`, `Finally finished my first triathlon, swimming was the hardest part.`]),
      self(phr(['ran', 'finished']), phr(['first half marathon', 'first triathlon']), phr(['The user ran a first half marathon.', 'The user finished a first triathlon.'])),
    );
    plant(6, 'city1', phr([`We finally moved to ${p.city1}, the boxes are everywhere.`, `Big news: I relocated to ${p.city1} for good.`]), self('lives in', p.city1, `The user lives in ${p.city1}.`));
    plant(6, 'trip1', phr([`Next spring I want to visit ${p.trip1} instead.`, `Maybe ${p.trip1} next year, we will see.`]), self('wants to visit', p.trip1, `The user wants to visit ${p.trip1}.`));
    plant(7, 'emp1', phr([`I started a new job at ${p.emp1} this week.`, `I left my old job and joined ${p.emp1}.`]), self('works at', p.emp1, `The user works at ${p.emp1}.`));
    plant(7, 'car1', phr([`I sold the old car and bought ${p.car1}.`, `Traded my car in for ${p.car1}.`]), self('drives', p.car1.replace(/^(a|an) /, ''), `The user drives ${p.car1}.`));

    const conversations: EvalConversation[] = [];
    const facts: EvalFact[] = [];
    const idOf = new Map<string, string>();
    const atOf = new Map<string, string>();
    SESSION_DAYS.forEach((day, s) => {
      const sessionId = `${userId}-s${s}`;
      const messages: EvalMessage[] = [];
      const planting = planted.get(s) ?? [];
      // Planted messages at fixed, spread-out user turns; the rest filler and replies.
      const slots = new Map(planting.map((pl, i) => [2 * Math.floor(((i + 1) * MESSAGES_PER_SESSION) / (2 * (planting.length + 1))), pl]));
      for (let m = 0; m < MESSAGES_PER_SESSION; m++) {
        const id = `${sessionId}-m${m}`;
        const at = new Date(Date.parse(`${day}T18:00:00Z`) + m * 60_000).toISOString();
        const pl = m % 2 === 0 ? slots.get(m) : undefined;
        const text = m % 2 === 1 ? pick(REPLIES) : pl ? pl.text : pick(FILLER);
        messages.push({ id, role: m % 2 === 0 ? 'user' : 'assistant', text, at });
        if (pl) {
          idOf.set(pl.key, id);
          atOf.set(pl.key, at);
          if (pl.fact) facts.push({ ...pl.fact, messageId: id, sessionId, validFrom: at });
        }
      }
      conversations.push({ sessionId, title: `chat of ${day}`, messages });
    });
    users.push({ userId, split, conversations, facts });

    const ev = (...keys: string[]) => keys.map((k) => idOf.get(k) as string);
    let n = 0;
    const ask = (category: Category, query: string, evidence: string[], extra: Partial<EvalQuestion> = {}) =>
      questions.push({ id: `${userId}-q${n++}`, userId, split, category, query, evidence, ...extra });
    const endOf = (month: string) => `${month}T23:59:59.000Z`;

    ask('direct', phr(['What is my favourite board game?', 'Which board game is my favourite?']), ev('game'));
    ask('direct', phr([`Where did I say ${F} was coming for dinner?`, `How long has ${F} been my friend?`]), ev('friend'));
    ask('direct', phr(['Where do I work?', 'Who is my employer?']), ev('emp1'));
    ask('paraphrase', phr(['Which musical instrument am I learning?', 'What craft do I do at night?']), ev('hobby'));
    ask('paraphrase', phr(['What food am I allergic to?', 'Which allergy do I have?']), ev('allergy'));
    ask('paraphrase', phr(['Am I a vegetarian?', 'Am I vegan or lactose free?']), ev('diet'));
    ask('paraphrase', phr(['Have I done any long distance running races?', 'Did I compete in an endurance race?']), ev('runner'));
    ask('paraphrase', phr(['What vehicle am I driving now?', 'Which automobile do I own at present?']), ev('car1'));
    ask('contradiction', phr(['Which city do I live in now?', 'Where is my home now?']), ev('city1'), { stale: ev('city0') });
    ask('contradiction', phr(['Where do I work at the moment?', 'Which company employs me today?']), ev('emp1'), { stale: ev('emp0') });
    ask('contradiction', phr(['What car do I drive these days?', 'What car do I have now?']), ev('car1'), { stale: ev('car0') });
    ask('multi-hop', phr([`Where does my ${sib} live?`, `Which city is my ${sib} living in?`]), ev('sibling', 'siblingCity'));
    ask('multi-hop', phr([`What does my ${sib} do for a living?`, `What is my ${sib}'s profession?`]), ev('sibling', 'siblingJob'));
    ask('multi-hop', phr([`What is the name of my best friend's dog?`, `What is my closest friend's pet called?`]), ev('friend', 'pet'));
    ask('multi-hop', phr([`Where did my manager grow up?`, `Which town does my manager come from?`]), ev('manager', 'managerFrom'));
    ask('temporal', phr(['Where did I live in May?', 'Which city was my home in spring?']), ev('city0'), { asOf: endOf('2025-05-31'), stale: ev('city1') });
    ask('temporal', phr(['Where was I working in the summer?', 'Which company did I work for in August?']), ev('emp0'), { asOf: endOf('2025-08-31'), stale: ev('emp1') });
    ask('temporal', phr(['What trip was I planning in March?', 'Where was I flying to, as I said in March?']), ev('trip0'), { asOf: endOf('2025-03-31'), stale: ev('trip1') });
    ask('temporal', phr(['What car did I drive in the spring?', 'Which car did I have in June?']), ev('car0'), { asOf: endOf('2025-06-30'), stale: ev('car1') });
  }
  return { seed, users, questions };
}
