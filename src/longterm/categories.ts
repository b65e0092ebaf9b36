/**
 * Conversational categories and the words that name their instances, for questions that ask for
 * a kind of thing ("What activities does Maya do?", "What pets …", "Where has Maya traveled?")
 * while what was said names instances ("my first pottery class", "we adopted a kitten", "a week in
 * Lisbon"): BM25 cannot link the two, and WordNet's hyponyms were both too broad ("activities"
 * reaches hundreds of everyday words) and missing these categories (nothing under "pet"). Curated
 * from what people commonly tell each other about, not from any evaluation set. Pure module.
 */
import { analyze, fold } from './text';

interface Category {
  name: string;
  /** Matched against the folded question: the question asks for things of this kind. */
  asks: RegExp;
  /** Asked only by an inference question ("Would Maya enjoy working as a vet?": see INFERENCE). */
  inference?: boolean;
  /** Instances and the words said about them, comma-separated (a phrase's words each count). */
  instances: string;
}

/** "What kind of X", "which types of X": a category asked for in the singular. */
const kindOf = (nouns: string) => new RegExp(`\\b(kinds?|types?|sorts?|genres?|forms?) of (${nouns})\\b`);
const either = (...patterns: RegExp[]) => new RegExp(patterns.map((p) => p.source).join('|'));

const ARTS =
  'painting, paintings, painted, paint, drawing, drew, sketching, sketches, sketchbook, watercolor, watercolors, watercolour, watercolours, acrylics, canvas, portrait, ' +
  'mural, illustration, calligraphy, pottery, ceramics, clay, wheel throwing, sculpture, sculpting, photography, photographs, camera, ' +
  'knitting, knitted, crochet, sewing, sewed, embroidery, quilting, quilt, weaving, woodworking, woodwork, carving, carpentry, ' +
  'scrapbooking, origami, jewelry, jewellery, beading, candle making, soap making, stained glass, collage, printmaking, gallery, exhibition';
const OUTDOORS =
  'hiking, hiked, hike, trail, trails, camping, camped, tent, campfire, fishing, fished, kayaking, kayak, canoeing, canoe, rafting, ' +
  'climbing, bouldering, mountain biking, bike ride, cycling, picnic, birdwatching, stargazing, gardening, garden, sailing, ' +
  'surfing, snorkeling, scuba diving, skiing, snowboarding, sledding, horseback riding, nature walk, national park, beach';
const SPORTS =
  'soccer, football, basketball, baseball, softball, volleyball, tennis, badminton, pickleball, squash, table tennis, ping pong, golf, ' +
  'hockey, rugby, cricket, lacrosse, frisbee, jogging, marathon, 5k, 10k, half marathon, race, triathlon, cycling, ' +
  'swimming, swam, rowing, kayaking, surfing, skiing, snowboarding, skating, skateboarding, climbing, bouldering, yoga, pilates, ' +
  'crossfit, gym, weightlifting, boxing, kickboxing, karate, judo, taekwondo, jiu jitsu, martial arts, fencing, archery, wrestling, ' +
  'gymnastics, bowling, darts, league, tournament, medal, workout, spin class';
const INSTRUMENTS =
  'guitar, guitars, bass, ukulele, banjo, mandolin, violin, viola, cello, double bass, harp, piano, keyboard, organ, synth, ' +
  'synthesizer, accordion, drums, drum kit, percussion, bongos, flute, clarinet, oboe, bassoon, saxophone, sax, trumpet, trombone, ' +
  'tuba, french horn, harmonica, recorder, xylophone, marimba, bagpipes, sitar, tabla';
const MUSIC_MAKING = 'singing, sang, sing, songs, song, songwriting, composing, composed, choir, band, gig, open mic, recording, ' + 'album, beats, producing, rehearsal, orchestra, karaoke';
const MUSIC_GENRES =
  'jazz, blues, rock, pop, folk, country music, soul, funk, hip hop, rap, reggae, classical, opera, metal, punk, indie, ' +
  'electronic, techno, disco, gospel, salsa, k-pop, musicals, concert, festival, playlist, vinyl, records';
const HOBBIES =
  'hobby, baking, baked, bake, cooking, cooked, recipe, journaling, writing poetry, blogging, podcast, chess, puzzles, ' +
  'jigsaw, board games, video games, gaming, crosswords, sudoku, collecting, stamps, coins, astronomy, volunteering, volunteered, ' +
  'dancing, danced, dance, ballet, salsa dancing, karaoke, acting, theater, theatre, improv, magic tricks, languages, ' +
  'coding, meditation, cosplay, lego';
const PETS =
  'pet, pets, dog, dogs, puppy, puppies, pup, cat, cats, kitten, kittens, kitty, rabbit, rabbits, bunny, hamster, guinea pig, gerbil, ' +
  'ferret, chinchilla, hedgehog, parrot, budgie, parakeet, cockatiel, canary, bird, goldfish, fish tank, aquarium, turtle, tortoise, ' +
  'snake, lizard, gecko, iguana, bearded dragon, axolotl, frog, horse, pony, chickens, hens, goat, alpaca, labrador, retriever, ' +
  'poodle, beagle, corgi, husky, terrier, bulldog, dachshund, spaniel, shepherd, pug, chihuahua, collie, tabby, adopted, adopt, ' +
  'rescue, shelter, vet, leash, litter box';
const WILDLIFE =
  'deer, bear, wolf, fox, owl, eagle, hawk, whale, whales, dolphin, dolphins, shark, sharks, seal, elephant, lion, tiger, giraffe, ' +
  'zebra, monkey, gorilla, penguin, koala, kangaroo, squirrel, butterfly, bees, zoo, safari, wildlife';
const FAMILY =
  'mom, mum, mother, dad, father, parents, sister, brother, siblings, son, daughter, kids, children, baby, wife, husband, partner, ' +
  'fiance, fiancee, grandma, grandmother, grandpa, grandfather, granny, grandparents, grandson, granddaughter, aunt, uncle, cousin, ' +
  'niece, nephew, stepmom, stepdad, twins, toddler, newborn, wedding, engaged, pregnant, born, graduated, retired, funeral, ' +
  'passed away, anniversary';
const TRAVEL =
  'trip, trips, travel, traveled, travelled, traveling, travelling, holiday, vacation, getaway, flight, flew, abroad, overseas, ' +
  'backpacking, cruise, road trip, hotel, hostel, airbnb, resort, sightseeing, tour, passport, airport, honeymoon, journey, ' +
  'itinerary, jet lag, souvenirs, visited, visiting';
const COUNTRIES =
  'Afghanistan, Albania, Algeria, Andorra, Angola, Argentina, Armenia, Australia, Austria, Azerbaijan, Bahamas, Bahrain, ' +
  'Bangladesh, Barbados, Belarus, Belgium, Belize, Benin, Bhutan, Bolivia, Bosnia, Botswana, Brazil, Brunei, Bulgaria, Cambodia, ' +
  'Cameroon, Canada, Chile, China, Colombia, Costa Rica, Croatia, Cuba, Cyprus, Czechia, Czech Republic, Denmark, Dominican ' +
  'Republic, Ecuador, Egypt, El Salvador, England, Estonia, Ethiopia, Fiji, Finland, France, Georgia, Germany, Ghana, Greece, ' +
  'Greenland, Guatemala, Honduras, Hungary, Iceland, India, Indonesia, Iran, Iraq, Ireland, Israel, Italy, Jamaica, Japan, Jordan, ' +
  'Kazakhstan, Kenya, Korea, Kosovo, Kuwait, Kyrgyzstan, Laos, Latvia, Lebanon, Liechtenstein, Lithuania, Luxembourg, Madagascar, ' +
  'Malawi, Malaysia, Maldives, Malta, Mauritius, Mexico, Moldova, Monaco, Mongolia, Montenegro, Morocco, Mozambique, Myanmar, ' +
  'Namibia, Nepal, Netherlands, Holland, New Zealand, Nicaragua, Nigeria, North Macedonia, Norway, Oman, Pakistan, Panama, ' +
  'Paraguay, Peru, Philippines, Poland, Portugal, Puerto Rico, Qatar, Romania, Russia, Rwanda, Samoa, Saudi Arabia, Scotland, ' +
  'Senegal, Serbia, Seychelles, Singapore, Slovakia, Slovenia, South Africa, Spain, Sri Lanka, Sweden, Switzerland, Taiwan, ' +
  'Tanzania, Thailand, Tunisia, Turkey, Uganda, Ukraine, United Arab Emirates, United Kingdom, United States, USA, America, ' +
  'Uruguay, Uzbekistan, Venezuela, Vietnam, Wales, Zambia, Zimbabwe, Europe, Asia, Africa, Caribbean, Scandinavia, Patagonia';
const CITIES =
  'Paris, London, Rome, Barcelona, Madrid, Seville, Valencia, Lisbon, Porto, Amsterdam, Berlin, Munich, Hamburg, Prague, Vienna, ' +
  'Budapest, Florence, Venice, Milan, Naples, Athens, Istanbul, Dublin, Edinburgh, Glasgow, Copenhagen, Stockholm, Oslo, Helsinki, ' +
  'Reykjavik, Brussels, Bruges, Zurich, Geneva, Krakow, Warsaw, Dubrovnik, Split, Nice, Marseille, Lyon, Bordeaux, Santorini, ' +
  'Mykonos, Crete, Sicily, Sardinia, Tuscany, Provence, Amalfi, Cinque Terre, Riviera, Algarve, Mallorca, Ibiza, Tenerife, Canary ' +
  'Islands, Bali, Tokyo, Kyoto, Osaka, Seoul, Busan, Beijing, Shanghai, Hong Kong, Macau, Taipei, Bangkok, Chiang Mai, Phuket, ' +
  'Hanoi, Ho Chi Minh, Saigon, Manila, Jakarta, Kuala Lumpur, Delhi, Mumbai, Goa, Jaipur, Kathmandu, Dubai, Abu Dhabi, Doha, ' +
  'Cairo, Marrakech, Casablanca, Cape Town, Johannesburg, Nairobi, Zanzibar, Sydney, Melbourne, Brisbane, Perth, Auckland, ' +
  'Queenstown, Honolulu, Hawaii, Maui, New York, Manhattan, Brooklyn, Chicago, Boston, Seattle, Portland, San Francisco, ' +
  'Los Angeles, San Diego, Las Vegas, Miami, Orlando, Austin, Nashville, New Orleans, Denver, Atlanta, Philadelphia, Washington DC, ' +
  'Vancouver, Toronto, Montreal, Quebec, Banff, Mexico City, Cancun, Tulum, Oaxaca, Havana, Lima, Cusco, Machu Picchu, Bogota, ' +
  'Cartagena, Rio de Janeiro, Sao Paulo, Buenos Aires, Santiago, Galapagos, Alps, Rockies, Yosemite, Yellowstone, Grand Canyon, ' +
  'Niagara Falls, Disneyland, Disney World, Everest, Himalayas, Sahara, Amazon, Alaska, Florida, California, Texas, Colorado, ' +
  'Arizona, Utah, Montana, Oregon, Vermont, Maine, Highlands, Cotswolds, Lake District';
const FOODS =
  'pizza, pasta, lasagna, spaghetti, sushi, ramen, noodles, dumplings, tacos, burrito, curry, soup, stew, salad, sandwich, burger, ' +
  'steak, barbecue, bbq, salmon, shrimp, risotto, paella, bread, sourdough, pancakes, waffles, cake, cookies, brownies, muffins, ' +
  'pie, cupcakes, ice cream, chocolate, cheese, tofu, vegan, vegetarian, kimchi, pho, pad thai, falafel, hummus, kebab, biryani, ' +
  'chili, omelette, smoothie, dessert, recipe, baking, cooking, dish';
const BOOKS =
  'book, books, novel, novels, biography, memoir, fantasy, mystery, thriller, romance, sci-fi, science fiction, poetry, poems, ' +
  'comics, graphic novel, manga, series, trilogy, author, chapter, library, bookstore, book club, kindle, audiobook, paperback, ' +
  'fiction, nonfiction, reading, read';
const WORK =
  'job, career, office, boss, manager, promotion, promoted, interview, hired, quit, coworkers, colleagues, shift, salary, raise, ' +
  'client, clients, startup, business, company, freelance, internship, project, deadline, workplace';
const EDUCATION =
  'school, college, university, degree, bachelors, masters, phd, class, course, exam, exams, thesis, semester, graduated, ' +
  'graduation, studying, homework, lecture, professor, teacher, student, students, scholarship, certificate, bootcamp, tutoring';

// Fields a person might work in, for inference questions ("Might Maya consider a career in education?").
const ANIMAL_CARE = 'animals, animal, pets, dog, dogs, puppy, cat, cats, kitten, horse, horses, rabbit, shelter, rescue, adopted, vet, zoo, wildlife, farm, volunteer';
const TEACHING =
  'teach, teaching, taught, tutor, tutoring, mentor, mentoring, students, pupils, kids, children, teenagers, teens, youth, school, classroom, ' +
  'homework, lesson, lessons, coaching, explaining, camp counselor';
const TECH =
  'code, coding, coded, programming, programmer, software, app, apps, website, websites, computer, computers, laptop, ' +
  'laptops, tech, gadgets, robot, robotics, electronics, hardware, python, javascript, hackathon, server, circuit';
const ENVIRONMENT =
  'climate, climate change, environment, recycling, recycle, compost, composting, garden, gardening, sustainable, sustainability, ' +
  'solar, plastic, pollution, trees, planting, nature, conservation, wildlife, vegan, cleanup, litter, protest, organic, ' +
  'energy, carbon, zero waste, thrift, bike to work, planet';
const WRITING = 'writing, wrote, write, story, stories, novel, poem, poems, poetry, journal, blog, essay, article, publish, published, manuscript, author';
const ART = `${ARTS}, art, artist, museum, design, designing, drawing`;
const HEALTH = 'hospital, patients, patient, clinic, first aid, nursing, medicine, medical, biology, anatomy, caring, caregiver, health, volunteer';
const CULINARY = 'cooking, cooked, baking, baked, recipe, recipes, kitchen, bread, cake, dinner, restaurant, dish, dishes, chef, menu, food';
const HELPING = 'listening, listened, support, supporting, volunteer, volunteering, mental health, therapy, counseling, helping, community, charity, advice';
const ACTIVISM = 'protest, rally, march, vote, voting, campaign, rights, petition, justice, debate, activist, equality, community, volunteer';
const ENTERPRISE = 'business, shop, startup, selling, sold, customers, market, etsy, side hustle, invest, investing, profit';

/** An inference question: the field it names stands for what the person said about it. */
const INFERENCE = /\b(would|could|might|likely|probably|consider|considering|career|job|jobs|profession|become|pursue|interested|enjoy|good at|make a good)\b/;

/** Plural category nouns, "what kind of …", "where has … been": each lists what it is asked for by. */
export const CATEGORIES: readonly Category[] = [
  {
    name: 'hobbies',
    asks: either(
      /\b(activities|hobbies|pastimes|pursuits|passions|interests|crafts|games)\b/,
      /\b(free|spare|leisure|down) ?time\b/,
      /\bfor fun\b/,
      kindOf('activity|activities|hobby|hobbies|pastime|things'),
    ),
    instances: [HOBBIES, ARTS, OUTDOORS, SPORTS, INSTRUMENTS].join(', '),
  },
  { name: 'arts', asks: either(/\b(arts|artworks|crafts|creations)\b/, /\bcreative\b/, kindOf('art|artwork|craft')), instances: ARTS },
  { name: 'outdoors', asks: either(/\boutdoors?\b/, /\bnature\b/, kindOf('outdoor')), instances: OUTDOORS },
  { name: 'sports', asks: either(/\b(sports|athletic|athletics|exercises|workouts|races)\b/, /\bfitness\b/, kindOf('sport|exercise|workout|fitness')), instances: SPORTS },
  { name: 'instruments', asks: either(/\binstruments\b/, kindOf('instrument')), instances: INSTRUMENTS },
  {
    name: 'music',
    asks: either(/\bmusic(al)? (does|has|did|do)\b/, /\b(songs|bands|genres|concerts)\b/, kindOf('music|song|songs|band|bands|concert')),
    instances: [MUSIC_GENRES, MUSIC_MAKING, INSTRUMENTS].join(', '),
  },
  { name: 'pets', asks: either(/\b(pets|animals|creatures)\b/, kindOf('pet|pets|animal|animals|dog|dogs|cat|cats')), instances: PETS },
  { name: 'wildlife', asks: either(/\b(animals|wildlife|creatures)\b/, kindOf('animal|animals|wildlife')), instances: WILDLIFE },
  { name: 'family', asks: either(/\b(relatives|relations|family members)\b/, /\b(in|about|from|with|of) (\w+ s|his|her|their|my|your|our) family\b/, kindOf('relative|relatives')), instances: FAMILY },
  {
    name: 'travel',
    asks: either(
      /\bwhere\b.*\b(travel\w*|been|gone|visited|vacationed|holidayed|flown)\b/,
      /\b(places|countries|cities|destinations|trips|vacations|holidays|journeys|travels)\b/,
      kindOf('place|places|trip|trips|vacation|vacations|holiday|holidays|travel|destination|destinations'),
    ),
    instances: [TRAVEL, COUNTRIES, CITIES].join(', '),
  },
  { name: 'foods', asks: either(/\b(foods|dishes|meals|recipes|cuisines|desserts|treats)\b/, kindOf('food|foods|dish|dishes|meal|meals|cuisine|dessert|recipe')), instances: FOODS },
  { name: 'books', asks: either(/\b(books|novels|authors)\b/, kindOf('book|books|novel|novels|reading|story|stories')), instances: BOOKS },
  { name: 'work', asks: either(/\b(jobs|careers|professions|occupations)\b/, /\bfor a living\b/, kindOf('job|jobs|work|career|careers')), instances: WORK },
  { name: 'education', asks: either(/\b(courses|classes|degrees|studies|subjects)\b/, kindOf('course|courses|class|classes|degree|degrees|school')), instances: EDUCATION },
  { name: 'animal care', inference: true, asks: /\b(vet|vets|veterinarian|veterinary|animals?|pets?|zoo|zookeeper|wildlife)\b/, instances: ANIMAL_CARE },
  { name: 'teaching', inference: true, asks: /\b(teacher|teachers|teaching|teach|education|educator|tutor|professor|school|mentor|coach)\b/, instances: TEACHING },
  {
    name: 'tech',
    inference: true,
    asks: /\b(tech|technology|software|developer|programmer|programming|coding|coder|engineer|engineering|computers?|web)\b/,
    instances: TECH,
  },
  {
    name: 'environment',
    inference: true,
    asks: /\b(environment|environmental|environmentalist|green|climate|ecology|ecological|sustainability|sustainable|conservation|nature|planet)\b/,
    instances: ENVIRONMENT,
  },
  { name: 'writing', inference: true, asks: /\b(writer|writing|author|journalist|journalism|poet|novelist)\b/, instances: WRITING },
  { name: 'art', inference: true, asks: /\b(artist|art|painter|designer|design|illustrator|photographer)\b/, instances: ART },
  { name: 'health', inference: true, asks: /\b(doctor|nurse|nursing|medicine|medical|healthcare|health care|paramedic)\b/, instances: HEALTH },
  { name: 'culinary', inference: true, asks: /\b(chef|cook|culinary|restaurant|baker|bakery|catering)\b/, instances: CULINARY },
  { name: 'music career', inference: true, asks: /\b(musician|music|singer|band|composer)\b/, instances: [MUSIC_MAKING, INSTRUMENTS].join(', ') },
  { name: 'sports career', inference: true, asks: /\b(athlete|coach|sports?|fitness|trainer|olympics?)\b/, instances: SPORTS },
  { name: 'helping', inference: true, asks: /\b(counselor|counsellor|therapist|psychologist|psychology|social work|social worker|helping people)\b/, instances: HELPING },
  { name: 'activism', inference: true, asks: /\b(politics|political|activist|activism|lawyer|law|justice|causes?|rights)\b/, instances: ACTIVISM },
  { name: 'enterprise', inference: true, asks: /\b(business|entrepreneur|startup|shop)\b/, instances: ENTERPRISE },
];

/**
 * Words of a phrase that name nothing by themselves ("New Zealand", "Grand Canyon", "South
 * Africa"): searched for, they would find any turn saying "new" or "south".
 */
const GENERIC = new Set(
  (
    'new north south east west united republic saint san santa los las de city great grand island islands lake lakes ' +
    'mount national park falls district old central arab states kingdom first to of a the box kit class ride walk tank change ' +
    'work making side half table board video double french country music throwing open road passed away el town world'
  ).split(' '),
);

/** A category's search terms: its instances analyzed as the index analyzes text, generic words of phrases left out. */
const termsCache = new Map<string, string[]>();
function termsOf(category: Category): string[] {
  let terms = termsCache.get(category.name);
  if (!terms) {
    const out = new Set<string>();
    for (const phrase of category.instances.split(',')) {
      const words = phrase.trim().split(/\s+/);
      const kept = words.length > 1 ? words.filter((w) => !GENERIC.has(fold(w))) : words;
      for (const t of analyze(kept.join(' '))) out.add(t);
    }
    termsCache.set(category.name, (terms = [...out]));
  }
  return terms;
}

/** The categories a question asks for (none for most questions: only one asking for a kind of thing). */
export function categoriesAsked(query: string): string[] {
  const text = fold(query).replace(/[^\p{L}\p{N}]+/gu, ' ');
  const inference = INFERENCE.test(text);
  return CATEGORIES.filter((c) => (!c.inference || inference) && c.asks.test(text)).map((c) => c.name);
}

/** The search terms of the instances of every category `query` asks for, without the query's own; empty when it asks for none. */
export function categoryTerms(query: string): string[] {
  const asked = new Set(categoriesAsked(query));
  if (asked.size === 0) return [];
  const own = new Set(analyze(query));
  const out = new Set<string>();
  for (const c of CATEGORIES) if (asked.has(c.name)) for (const t of termsOf(c)) if (!own.has(t)) out.add(t);
  return [...out];
}
