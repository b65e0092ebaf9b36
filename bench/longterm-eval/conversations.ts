/**
 * A seeded evaluation set shaped like long conversations between two people (issue 30): each
 * conversation two named friends over 24 dated sessions of ~22 turns spanning most of a year,
 * life events told across turns (the detail often in the turn after the other person's question,
 * some turns sharing a photo given as a caption, times said relative to the session's date), and
 * small talk that shares the events' words. Questions of four kinds, each naming its evidence
 * turns:
 *   single       a detail from one turn ("What did Maya make at the pottery class?");
 *   temporal     when something happened ("When did Maya go to the book fair?"): the turn saying so;
 *   multi-hop    things said across sessions ("What activities does Maya do?", "What do Maya's
 *                kids like?"): every such turn;
 *   open-domain  an inference from what was said ("Would Maya enjoy a job with animals?").
 * Every question is kept; the overall figure weighs the kinds as the held-out benchmark mixes
 * them (KIND_SHARES). Split: conversations 0–5 dev, 6–9 held-out; the held-out ones
 * draw names, activities, places and question wordings from pools the dev ones never see.
 */
import { prng } from '../prng';

export type QuestionKind = 'single' | 'temporal' | 'multi-hop' | 'open-domain';
export const QUESTION_KINDS: readonly QuestionKind[] = ['single', 'temporal', 'multi-hop', 'open-domain'];
export type Split = 'dev' | 'heldout';
/** The held-out benchmark's mix of kinds, for the overall figure. */
export const KIND_SHARES: Record<QuestionKind, number> = { single: 0.55, temporal: 0.21, 'multi-hop': 0.18, 'open-domain': 0.06 };

export interface Turn {
  id: string;
  role: 'user' | 'assistant';
  name: string;
  text: string;
}
export interface Session {
  sessionId: string;
  /** The session's date, every turn's `at`. */
  at: string;
  turns: Turn[];
}
export interface Conversation {
  userId: string;
  split: Split;
  speakers: [string, string];
  sessions: Session[];
}
export interface Question {
  id: string;
  userId: string;
  split: Split;
  kind: QuestionKind;
  query: string;
  evidence: string[];
}
export interface ConversationSet {
  seed: number;
  conversations: Conversation[];
  questions: Question[];
}

/** [dev values, held-out values]: disjoint halves. */
type Halves<T> = readonly [readonly T[], readonly T[]];

const NAMES: Halves<string> = [
  ['Maya', 'Jordan', 'Priya', 'Lucas', 'Hana', 'Omar', 'Elena', 'Felix', 'Rosa', 'Kenji', 'Talia', 'Bruno'],
  ['Caleb', 'Ingrid', 'Mateus', 'Noor', 'Aiden', 'Sofia', 'Tobias', 'Leila'],
];

/** Something done once and talked over: the turn saying it, a follow-up question, the detail. */
interface Activity {
  /** Category for multi-hop questions. */
  cat: 'activity' | 'instrument' | 'sport';
  /** "I {did} {when}!" */
  did: string;
  /** "When did X {ask}?" */
  ask: string;
  /** The follow-up question's verb: "What did you {follow}?" */
  follow: string;
  /** The detail question: "What did X {detail} …?" with the event's name. */
  detailQ: string;
  /** How the detail turn may repeat the question's verb (half the time). */
  echo: string;
  results: readonly string[];
  photo: string;
}
const ACTIVITIES: Halves<Activity> = [
  [
    {
      cat: 'activity',
      did: 'took my first pottery class',
      ask: 'take a pottery class',
      follow: 'make',
      detailQ: 'make in the pottery class',
      echo: 'I made',
      results: ['a lopsided bowl with a blue glaze', 'a small mug for my mom'],
      photo: 'a handmade clay bowl drying on a shelf',
    },
    {
      cat: 'activity',
      did: 'finished a big painting of the lake',
      ask: 'paint the lake',
      follow: 'use for the colours',
      detailQ: 'use to paint the lake',
      echo: 'I used',
      results: ['watercolours, mostly greens and a bit of gold', 'acrylics on a huge canvas'],
      photo: 'a painting of a lake at sunset',
    },
    {
      cat: 'sport',
      did: 'ran my first 10k race',
      ask: 'run a 10k race',
      follow: 'finish in',
      detailQ: 'finish the 10k race in',
      echo: 'I finished in',
      results: ['just under fifty-eight minutes', 'an hour and two minutes, slow but happy'],
      photo: 'a finisher medal on a blue ribbon',
    },
    {
      cat: 'instrument',
      did: 'had my first violin lesson',
      ask: 'start violin lessons',
      follow: 'learn first',
      detailQ: 'learn first on the violin',
      echo: 'We learned',
      results: ['a simple folk tune, Twinkle Twinkle basically', 'how to hold the bow without shaking'],
      photo: 'a violin case open on a chair',
    },
    {
      cat: 'activity',
      did: 'went camping at the lake with the kids',
      ask: 'go camping',
      follow: 'do out there',
      detailQ: 'do while camping',
      echo: 'While camping',
      results: ['we roasted marshmallows and watched the stars', 'the kids caught their first fish'],
      photo: 'a tent beside a lake at dusk',
    },
    {
      cat: 'sport',
      did: 'joined a beach volleyball league',
      ask: 'join a volleyball league',
      follow: 'call your team',
      detailQ: 'name the volleyball team',
      echo: 'We named the team',
      results: ['the Sand Sharks, my idea', 'Net Gains, which everyone hates'],
      photo: 'a volleyball team posing on the sand',
    },
    {
      cat: 'activity',
      did: 'baked sourdough bread for the first time',
      ask: 'bake sourdough',
      follow: 'put in it',
      detailQ: 'put in the sourdough',
      echo: 'I put in',
      results: ['rosemary and sea salt', 'olives and a little garlic'],
      photo: 'a loaf of crusty bread on a board',
    },
    {
      cat: 'instrument',
      did: 'played guitar at an open mic night',
      ask: 'play at an open mic',
      follow: 'play',
      detailQ: 'play at the open mic',
      echo: 'I played',
      results: ['two covers and one song I wrote', 'an old blues song my dad taught me'],
      photo: 'a small stage with a microphone and a guitar',
    },
  ],
  [
    {
      cat: 'activity',
      did: 'signed up for a woodworking course',
      ask: 'start woodworking',
      follow: 'build',
      detailQ: 'build in the woodworking course',
      echo: 'I built',
      results: ['a little bookshelf for the hallway', 'a birdhouse with a green roof'],
      photo: 'a wooden birdhouse on a workbench',
    },
    {
      cat: 'activity',
      did: 'tried rock climbing at the indoor gym',
      ask: 'go rock climbing',
      follow: 'manage to climb',
      detailQ: 'climb at the gym',
      echo: 'I climbed',
      results: ['the easy orange wall, three times', 'halfway up the overhang before I fell off'],
      photo: 'a climbing wall with colourful holds',
    },
    {
      cat: 'sport',
      did: 'swam across the bay in the charity swim',
      ask: 'swim across the bay',
      follow: 'raise',
      detailQ: 'raise in the charity swim',
      echo: 'We raised',
      results: ['about six hundred dollars for the hospital', 'enough for two new wheelchairs'],
      photo: 'swimmers in bright caps in the sea',
    },
    {
      cat: 'instrument',
      did: 'started learning the piano',
      ask: 'start the piano',
      follow: 'practise',
      detailQ: 'practise on the piano',
      echo: 'I practise',
      results: ['scales, and a slow Chopin prelude', 'a Beatles song for my sister'],
      photo: 'sheet music on an upright piano',
    },
    {
      cat: 'activity',
      did: 'went birdwatching in the marshes',
      ask: 'go birdwatching',
      follow: 'spot',
      detailQ: 'spot while birdwatching',
      echo: 'We spotted',
      results: ['a heron and two kingfishers', 'a family of swans with grey chicks'],
      photo: 'a heron standing in reeds',
    },
    {
      cat: 'sport',
      did: 'did my first triathlon',
      ask: 'do a triathlon',
      follow: 'find the hardest',
      detailQ: 'find hardest in the triathlon',
      echo: 'The hardest was',
      results: ['the swim, the water was freezing', 'the last hill on the bike'],
      photo: 'a bike racked in a transition area',
    },
    {
      cat: 'activity',
      did: 'made a quilt for my niece',
      ask: 'make a quilt',
      follow: 'put on it',
      detailQ: 'put on the quilt',
      echo: 'I put on it',
      results: ['little foxes and stars', 'patches from her old baby clothes'],
      photo: 'a colourful patchwork quilt on a bed',
    },
    {
      cat: 'instrument',
      did: 'joined a community choir',
      ask: 'join a choir',
      follow: 'sing',
      detailQ: 'sing in the choir',
      echo: 'I sing',
      results: ['alto, and a solo in the spring concert', 'gospel songs mostly, I love it'],
      photo: 'a choir in robes on church steps',
    },
  ],
];

/** A place visited. */
interface Trip {
  place: string;
  what: string;
  sights: readonly string[];
}
const TRIPS: Halves<Trip> = [
  [
    { place: 'Lisbon', what: 'a week in Lisbon', sights: ['the tram up the hill', 'custard tarts every morning'] },
    { place: 'the Grand Canyon', what: 'a road trip to the Grand Canyon', sights: ['sunrise over the rim', 'a mule ride down the trail'] },
    { place: 'Kyoto', what: 'two weeks in Kyoto', sights: ['the bamboo forest', 'a tea ceremony in an old house'] },
    { place: 'Iceland', what: 'a trip to Iceland', sights: ['the northern lights', 'black sand beaches'] },
  ],
  [
    { place: 'Prague', what: 'a long weekend in Prague', sights: ['the astronomical clock', 'beer gardens by the river'] },
    { place: 'Yosemite', what: 'a hiking trip to Yosemite', sights: ['Half Dome at dawn', 'a bear near the campsite'] },
    { place: 'Marrakech', what: 'ten days in Marrakech', sights: ['the spice market', 'mint tea on a rooftop'] },
    { place: 'the Scottish Highlands', what: 'a drive through the Scottish Highlands', sights: ['a castle on a loch', 'sheep on every road'] },
  ],
];

interface Pet {
  animal: string;
  names: readonly string[];
  habit: string;
}
const PETS: Halves<Pet> = [
  [
    { animal: 'puppy', names: ['Biscuit', 'Luna'], habit: 'chews every shoe in the house' },
    { animal: 'kitten', names: ['Pepper', 'Miso'], habit: 'sleeps on my keyboard' },
    { animal: 'rabbit', names: ['Clover', 'Thumper'], habit: 'hops around the garden' },
  ],
  [
    { animal: 'parrot', names: ['Kiwi', 'Mango'], habit: 'whistles the theme from a cartoon' },
    { animal: 'tortoise', names: ['Shelby', 'Tank'], habit: 'eats strawberries off my hand' },
    { animal: 'hamster', names: ['Nibbles', 'Peanut'], habit: 'runs on its wheel all night' },
  ],
];

interface Milestone {
  relative: string;
  names: readonly string[];
  /** "My son Leo {did} {when}." */
  did: string;
  ask: string;
  detailQ: string;
  details: readonly string[];
}
const FAMILY: Halves<Milestone> = [
  [
    {
      relative: 'son',
      names: ['Leo', 'Sam'],
      did: 'lost his first tooth',
      ask: 'lose his first tooth',
      detailQ: 'get from the tooth fairy',
      details: ['a shiny coin and a tiny note', 'five dollars, the tooth fairy is generous'],
    },
    {
      relative: 'daughter',
      names: ['Ella', 'Nina'],
      did: 'started kindergarten',
      ask: 'start kindergarten',
      detailQ: 'love most about kindergarten',
      details: ['the sandpit and her teacher Miss Kim', 'story time with the class hamster'],
    },
    {
      relative: 'mom',
      names: ['Linda', 'Grace'],
      did: 'retired after thirty years of teaching',
      ask: 'retire',
      detailQ: 'plan to do after retiring',
      details: ['travel and finally learn Spanish', 'grow tomatoes and spoil the grandkids'],
    },
  ],
  [
    {
      relative: 'brother',
      names: ['Max', 'Theo'],
      did: 'got engaged',
      ask: 'get engaged',
      detailQ: 'propose with',
      details: ["his grandmother's ring on a mountain top", 'a ring hidden in a cupcake'],
    },
    {
      relative: 'sister',
      names: ['Ava', 'Zoe'],
      did: 'graduated from nursing school',
      ask: 'graduate',
      detailQ: 'want to do after nursing school',
      details: ["work in a children's hospital", 'travel as a nurse for a year'],
    },
    {
      relative: 'dad',
      names: ['Frank', 'Walter'],
      did: 'had knee surgery',
      ask: 'have surgery',
      detailQ: 'do to recover from surgery',
      details: ['physical therapy three times a week', 'slow walks with the dog every morning'],
    },
  ],
];

/** Interests behind an open-domain question: what is said, and what is asked about it. */
interface Interest {
  said: readonly string[];
  ask: readonly string[];
}
const INTERESTS: Halves<Interest> = [
  [
    {
      said: ['I volunteered at the animal shelter again, walking the dogs that nobody adopts.', 'Honestly the best part of my week is feeding the cats at the rescue centre.'],
      ask: ['Would {X} enjoy working as a vet?', 'Is {X} likely to work with animals someday?'],
    },
    {
      said: ['I keep reading about climate change and it makes me want to do something real.', 'We started a community garden on our street to grow our own vegetables.'],
      ask: ['Would {X} care about environmental causes?', 'Is {X} likely to support green politics?'],
    },
  ],
  [
    {
      said: ['I mentor two teenagers at the youth centre on Thursdays, helping with homework.', 'Talking with those kids about their future is the most rewarding thing I do.'],
      ask: ['Would {X} make a good teacher?', 'Might {X} consider a career in education?'],
    },
    {
      said: ['I spent the whole weekend fixing old laptops to donate to the library.', "I taught myself to code a little website for my aunt's bakery."],
      ask: ['Would {X} be interested in a job in tech?', 'Could {X} become a software developer?'],
    },
  ],
];

/** A topic a person comes back to across sessions, asked about as a whole: a multi-hop question sharing a word with its evidence. */
interface Thread {
  said: readonly string[];
  ask: string;
}
const THREADS: Halves<Thread> = [
  [
    {
      said: [
        'My kids are obsessed with dinosaurs, we read dinosaur books every night.',
        'The kids begged to go back to the aquarium, they loved the sharks.',
        'We built a treehouse with the kids this weekend, they adore it.',
      ],
      ask: "What do {X}'s kids like?",
    },
    {
      said: [
        "I just finished reading 'The Night Circus', I could not put it down.",
        'Now I am reading a biography of Marie Curie, so inspiring.',
        "My book club picked 'Circe' for next month, I started it already.",
      ],
      ask: 'What books has {X} read?',
    },
  ],
  [
    {
      said: [
        'Our garden finally has tomatoes, and the basil is going wild.',
        'I planted sunflowers along the garden fence, they are taller than me now.',
        'Picked the first strawberries from the garden today!',
      ],
      ask: 'What has {X} grown in the garden?',
    },
    {
      said: ['I have been listening to a lot of jazz lately, Coltrane mostly.', 'Went to a folk concert in the park, the music was beautiful.', 'My playlist this month is all old soul music.'],
      ask: 'What music does {X} enjoy?',
    },
  ],
];

const WHEN = ['yesterday', 'last weekend', 'last Friday', 'two weeks ago', 'last month', 'on Saturday', 'this week'];
const OPENERS = ['Guess what?', 'Oh, big news:', 'So,', 'You will love this:', 'Okay, update from me:', 'Hey, I have to tell you,'];
const REACTIONS = ['Wow, that is amazing!', 'No way, I am so happy for you!', 'That sounds like so much fun!', 'Oh, I love that.', 'How exciting!', 'That is so cool.'];
const ACKS = [
  'That is so sweet, thanks for sharing.',
  'Love that for you, seriously.',
  'You always find the best things to do.',
  'Haha, that sounds just like you.',
  'I really need to try something like that.',
  'Aw, that made my day to hear.',
];
/** Small talk, sharing common words with the events on purpose. */
const SMALL_TALK = [
  'Work has been so busy lately, I barely had time for anything fun.',
  'How are the kids doing? Are they enjoying school this year?',
  'I have been trying to read more books, but my phone keeps winning.',
  'The weather has been crazy, sunny one day and then rain all weekend.',
  'Family really is everything, I feel so lucky to have all of you.',
  'I want to try something new this year, maybe a class or a club.',
  'We should plan a trip together sometime, just the two of us.',
  'My weekend was quiet, mostly laundry and a long walk in the park.',
  'I have always wanted to learn an instrument, maybe one day.',
  'Thanks for always being there for me, it means a lot.',
  'Did you watch anything good lately? I need a new show.',
  'The kids keep asking for a pet, I am not sure we are ready.',
  'I finally cleaned out the garage, found so many old photos.',
  'Running late again, the traffic this morning was terrible.',
  'I think self care is so important, I am trying to slow down.',
  'My friends from college came over for dinner, it was lovely.',
  'I painted the fence on Sunday, does that count as art?',
  'We had a big family dinner for my aunt, way too much food.',
  'Sports on TV all weekend at our place, not my choice.',
  'I bought a new plant for the kitchen, let us see if it survives.',
];
const GREETINGS = ['Hey {Y}! How have you been?', 'Hi {Y}, long time no talk!', '{Y}! So good to hear from you.', 'Hey you, how was your week?'];
const GREET_BACK = ['Hey {X}! Pretty good, busy as always. You?', 'Hi! Doing well, thanks. What is new with you?', 'Good to hear from you too! Things are fine here.'];
const BYES = ['I have to run, talk soon!', 'Okay, bedtime for me. Bye!', 'Catch you later, take care!'];
const BYES_BACK = ['Bye! Talk soon.', 'Take care, {X}!', 'Night night!'];

/** Multi-hop wordings, by category: [dev wordings, held-out wordings]. */
const MULTI: Record<'activity' | 'instrument' | 'sport' | 'trip' | 'pet' | 'family', Halves<string>> = {
  activity: [
    ['What activities does {X} do?', 'What hobbies has {X} picked up?'],
    ['What does {X} like to do in free time?', 'Which creative pastimes has {X} tried?'],
  ],
  instrument: [['What instruments does {X} play?'], ['What kind of music does {X} make?']],
  sport: [['What sports has {X} done?'], ['Which athletic events has {X} taken part in?']],
  trip: [['Where has {X} traveled?'], ['Which places has {X} visited on holiday?']],
  pet: [['What pets does {X} have?'], ['Which animals live with {X}?']],
  family: [["What has happened in {X}'s family lately?"], ['What news has {X} shared about relatives?']],
};

const TALK_OPENERS = ['', '', 'Honestly, ', 'Ugh, ', 'Haha, ', 'By the way, ', 'Oh, ', 'You know what, '];
const TALK_TAILS = ['', '', '', ' Anyway.', ' How about you?', ' Life, right?', ' Not complaining though.', ' We will see.', ' Fingers crossed.'];

const SESSIONS = 24;
const CONVERSATIONS = 10;
const DEV_CONVERSATIONS = 6;

export function generateConversationSet(seed = 30030): ConversationSet {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const shuffled = <T>(xs: readonly T[]): T[] => {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  };
  const conversations: Conversation[] = [];
  const questions: Question[] = [];
  /** Small talk with some variety around its common words: people do not repeat one line word for word. */
  const smallTalk = () => {
    const body = pick(SMALL_TALK);
    const opener = pick(TALK_OPENERS);
    return `${opener}${opener ? body.charAt(0).toLowerCase() + body.slice(1) : body}${pick(TALK_TAILS)}`;
  };

  for (let c = 0; c < CONVERSATIONS; c++) {
    const split: Split = c < DEV_CONVERSATIONS ? 'dev' : 'heldout';
    const side = split === 'dev' ? 0 : 1;
    const names = shuffled(NAMES[side]);
    const speakers: [string, string] = [names[0] as string, names[1] as string];
    const userId = `conv-${c}`;
    const fill = (text: string, x: string, y: string) => text.replaceAll('{X}', x).replaceAll('{Y}', y);

    /** A story: turns by speaker index, tags naming evidence turns, questions on those tags. */
    interface Story {
      by: 0 | 1;
      lines: { by: 0 | 1; text: string; tag?: string }[];
      asks: { kind: QuestionKind; query: string; tags: string[] }[];
      cat?: keyof typeof MULTI;
    }
    const stories: Story[] = [];
    const multiEvidence = new Map<string, string[]>(); // `${speaker}|${cat}` → tags
    const addEvidence = (by: 0 | 1, cat: keyof typeof MULTI, tagOf: string) => multiEvidence.set(`${by}|${cat}`, [...(multiEvidence.get(`${by}|${cat}`) ?? []), tagOf]);
    let tagN = 0;
    const tag = () => `t${tagN++}`;

    for (const by of [0, 1] as const) {
      const X = speakers[by];
      const other = (1 - by) as 0 | 1;
      const Y = speakers[other];
      const mine = <T>(xs: readonly T[]) => shuffled(xs).filter((_, i) => i % 2 === by);
      for (const a of mine(ACTIVITIES[side])) {
        const main = tag();
        const detail = tag();
        const when = pick(WHEN);
        stories.push({
          by,
          cat: a.cat,
          lines: [
            { by, text: `${pick(OPENERS)} I ${a.did} ${when}!`, tag: main },
            { by: other, text: `${pick(REACTIONS)} What did you ${a.follow}?` },
            { by, text: `${rand() < 0.5 ? `${a.echo} ` : ''}${pick(a.results)}. [shares a photo: ${a.photo}]`, tag: detail },
            { by: other, text: pick(ACKS) },
          ],
          asks: [
            { kind: 'temporal', query: `When did ${X} ${a.ask}?`, tags: [main] },
            { kind: 'single', query: `What did ${X} ${a.detailQ}?`, tags: [detail] },
          ],
        });
        addEvidence(by, a.cat, main);
      }
      for (const t of mine(TRIPS[side])) {
        const main = tag();
        const detail = tag();
        stories.push({
          by,
          cat: 'trip',
          lines: [
            { by: other, text: `You have been quiet, ${X}! Where have you been?` },
            { by, text: `We just got back from ${t.what} ${pick(WHEN)}. Best holiday in years.`, tag: main },
            { by: other, text: `${pick(REACTIONS)} What was the highlight?` },
            { by, text: `${rand() < 0.5 ? 'The highlight was probably' : 'Probably'} ${pick(t.sights)}. [shares a photo: ${pick(t.sights)}]`, tag: detail },
          ],
          asks: [
            { kind: 'temporal', query: `When did ${X} go to ${t.place}?`, tags: [main] },
            { kind: 'single', query: `What was the highlight of ${X}'s trip to ${t.place}?`, tags: [detail] },
          ],
        });
        addEvidence(by, 'trip', main);
      }
      for (const p of mine(PETS[side])) {
        const main = tag();
        const detail = tag();
        const petName = pick(p.names);
        stories.push({
          by,
          cat: 'pet',
          lines: [
            { by, text: `We adopted a ${p.animal} ${pick(WHEN)}! Meet ${petName}. [shares a photo: a ${p.animal} curled up on a blanket]`, tag: main },
            { by: other, text: `Oh my goodness, so cute! How is ${petName} settling in?` },
            { by, text: `Great, apart from the fact that ${petName} ${p.habit}.`, tag: detail },
          ],
          asks: [
            { kind: 'single', query: `What is the name of ${X}'s ${p.animal}?`, tags: [main] },
            { kind: 'single', query: `What does ${X}'s ${p.animal} do at home?`, tags: [detail] },
            { kind: 'temporal', query: `When did ${X} adopt a ${p.animal}?`, tags: [main] },
          ],
        });
        addEvidence(by, 'pet', main);
      }
      for (const f of mine(FAMILY[side])) {
        const main = tag();
        const detail = tag();
        const rel = pick(f.names);
        stories.push({
          by,
          cat: 'family',
          lines: [
            { by, text: `My ${f.relative} ${rel} ${f.did} ${pick(WHEN)}, I am still emotional about it.`, tag: main },
            { by: other, text: `${pick(REACTIONS)} Tell me everything.` },
            { by, text: `Well, ${rel} was so proud. Now it is all about ${pick(f.details)}.`, tag: detail },
            { by: other, text: pick(ACKS) },
          ],
          asks: [
            { kind: 'temporal', query: `When did ${X}'s ${f.relative} ${f.ask}?`, tags: [main] },
            { kind: 'single', query: `What did ${X}'s ${f.relative} ${f.detailQ}?`, tags: [detail] },
          ],
        });
        addEvidence(by, 'family', main);
      }
      /** Lines said one per story (so in different sessions), each after the other person's prompt; the questions come with the first. */
      const sayOverTime = (said: readonly string[], prompt: () => string, asks: (tags: string[]) => Story['asks']) => {
        const tags = said.map(() => tag());
        said.forEach((text, i) =>
          stories.push({
            by,
            lines: [
              { by: other, text: prompt() },
              { by, text, tag: tags[i] as string },
              { by: other, text: pick(ACKS) },
            ],
            asks: i === 0 ? asks(tags) : [],
          }),
        );
      };
      const interest = INTERESTS[side][(c + by) % INTERESTS[side].length] as Interest;
      sayOverTime(
        interest.said,
        () => `What else is new, ${X}?`,
        (tags) => interest.ask.map((a) => ({ kind: 'open-domain' as const, query: fill(a, X, Y), tags })),
      );
      const thread = THREADS[side][(c + by) % THREADS[side].length] as Thread;
      sayOverTime(
        thread.said,
        () => pick(['Anything fun lately?', `How is life, ${X}?`, 'What have you been up to?']),
        (tags) => [{ kind: 'multi-hop' as const, query: fill(thread.ask, X, Y), tags }],
      );
    }

    // Stories spread over the sessions in a shuffled order; each session 2–3 stories in small talk.
    const order = shuffled(stories);
    const perSession: Story[][] = Array.from({ length: SESSIONS }, () => []);
    order.forEach((s, i) => (perSession[i % SESSIONS] as Story[]).push(s));
    const idOfTag = new Map<string, string>();
    const sessions: Session[] = [];
    let day = Date.parse('2023-03-04T00:00:00Z');
    perSession.forEach((chunk, s) => {
      day += (7 + Math.floor(rand() * 14)) * 86_400_000;
      const at = new Date(day + (9 + Math.floor(rand() * 10)) * 3_600_000).toISOString();
      const sessionId = `${userId}-s${s + 1}`;
      const lines: { by: 0 | 1; text: string; tag?: string }[] = [];
      const starter = (s % 2) as 0 | 1;
      const X = speakers[starter];
      const Y = speakers[1 - starter] as string;
      lines.push({ by: starter, text: fill(pick(GREETINGS), X, Y) }, { by: (1 - starter) as 0 | 1, text: fill(pick(GREET_BACK), X, Y) });
      for (const story of chunk) {
        for (let k = 0; k < 3; k++) lines.push({ by: (lines.length % 2) as 0 | 1, text: smallTalk() });
        lines.push(...story.lines);
      }
      while (lines.length < 20) lines.push({ by: (lines.length % 2) as 0 | 1, text: smallTalk() });
      lines.push({ by: starter, text: pick(BYES) }, { by: (1 - starter) as 0 | 1, text: fill(pick(BYES_BACK), X, Y) });
      const turns = lines.map((l, t) => {
        const id = `${userId}-D${s + 1}:${t + 1}`;
        if (l.tag) idOfTag.set(l.tag, id);
        return { id, role: l.by === 0 ? ('user' as const) : ('assistant' as const), name: speakers[l.by], text: l.text };
      });
      sessions.push({ sessionId, at, turns });
    });
    conversations.push({ userId, split, speakers, sessions });

    const ids = (tags: readonly string[]) => tags.map((t) => idOfTag.get(t) as string);
    const all: Omit<Question, 'id'>[] = [];
    for (const story of stories) for (const a of story.asks) all.push({ userId, split, kind: a.kind, query: a.query, evidence: ids(a.tags) });
    for (const [key, tags] of multiEvidence) {
      if (tags.length < 2) continue;
      const [by, cat] = key.split('|') as [string, keyof typeof MULTI];
      for (const wording of MULTI[cat][side]) all.push({ userId, split, kind: 'multi-hop', query: fill(wording, speakers[Number(by)] as string, ''), evidence: ids(tags) });
    }
    all.forEach((q, n) => questions.push({ id: `${userId}-q${n}`, ...q }));
  }
  return { seed, conversations, questions };
}
